/// Makes untrusted text safe for a log line: control characters (CR, LF, NUL, ESC, …) become
/// visible escapes, so a value from a client can neither forge a line nor hide in a terminal.
package enum LogText {
    /// `text` with every control character written as `\n`, `\r`, `\t` or `\u{XX}`, cut to
    /// `limit` characters (with `…`).
    package static func escaped(_ text: String, limit: Int = 1024) -> String {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count >= limit {
                result += "…"
                break
            }
            count += 1
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.properties.generalCategory == .control || Self.reordersOrBreaks(scalar):
                result += "\\u{\(String(scalar.value, radix: 16))}"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Line and paragraph separators (a log reader may start a new line at them) and the
    /// controls that reorder text (bidi embeddings, overrides, isolates and marks: a line can be
    /// made to read differently from what it holds).
    static func reordersOrBreaks(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true
        default: false
        }
    }
}
