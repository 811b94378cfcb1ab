import Testing
@testable import PigeonCore
import PigeonTestSupport

/// What reaches a log line from outside: nothing that breaks or reorders the line.
@Suite("Log text", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct LogTextTests {
    @Test("line and paragraph separators, bidi overrides, isolates and marks, and control characters are written escaped")
    func escapesBreaksAndReordering() {
        let hostile = "a\u{2028}b\u{2029}c\u{202E}d\u{2066}e\u{2069}f\u{200F}g\u{061C}h\ni\u{0085}j\u{0000}k"
        let escaped = LogText.escaped(hostile)
        #expect(escaped == "a\\u{2028}b\\u{2029}c\\u{202e}d\\u{2066}e\\u{2069}f\\u{200f}g\\u{61c}h\\ni\\u{85}j\\u{0}k")
        #expect(!escaped.unicodeScalars.contains { $0.value == 0x2028 || $0.value == 0x202E || $0.value == 0x2066 })
        // Ordinary text, accents and other scripts stay as they are.
        #expect(LogText.escaped("Zoë — Привет, 你好") == "Zoë — Привет, 你好")
        #expect(LogText.escaped(String(repeating: "x", count: 10), limit: 4) == "xxxx…")
    }
}
