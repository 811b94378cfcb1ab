import Testing
@testable import PigeonCore
import PigeonTestSupport

@Suite("Logging", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct LoggingTests {
    @Test("records below the level are dropped; metadata is merged and sorted")
    func levelsAndMetadata() {
        let memory = InMemoryLogHandler()
        var logger = Logger(label: "test", level: .info, handler: memory)
        logger.metadata["request"] = "r1"
        logger.debug("hidden")
        logger.warning("shown", metadata: ["b": "2", "a": "has space"])
        #expect(memory.records.count == 1)
        let line = StreamLogHandler.format(memory.records[0])
        #expect(line.hasSuffix("WARNING test: shown a=\"has space\" b=2 request=r1"))
    }

    @Test("changeLevel reaches every logger made with withLabel, wherever copied; setting level changes one copy only")
    func sharedLevel() {
        let memory = InMemoryLogHandler()
        let root = Logger(label: "pigeon", level: .info, handler: memory)
        let component = root.withLabel("pigeon.delivery")
        var alone = root.withLabel("pigeon.alone")
        alone.level = .error
        component.debug("hidden at info")
        root.changeLevel(to: .debug)
        component.debug("shown at debug")
        #expect(component.level == .debug && root.level == .debug)
        alone.warning("hidden: its own level")
        component.changeLevel(to: .warning)
        root.info("hidden again")
        root.warning("shown at warning")
        #expect(memory.records.map(\.message) == ["shown at debug", "shown at warning"])
        #expect(memory.records.map(\.label) == ["pigeon.delivery", "pigeon"])
    }

    @Test("tokens are shortened, never logged whole")
    func redaction() {
        let token = "0123456789abcdef0123456789abcdef"
        #expect(Redaction.token(token) == "0123…cdef")
        #expect(Redaction.token("short") == "*****")
        // Twelve characters are starred whole; from thirteen, four and four are kept. Counted
        // in characters, not bytes.
        #expect(Redaction.token("123456789012") == "************")
        #expect(Redaction.token("1234567890123") == "1234…0123")
        #expect(Redaction.token("ééééééééééé") == "***********")
        #expect(Redaction.token("éééééééééééé€") == "éééé…ééé€")
        // CR LF is one character: such a value takes the general path.
        #expect(Redaction.token("ab\r\ncdefghijk") == "************")
        #expect(Redaction.token("ab\r\ncdefghijkl") == "ab\r\nc…ijkl")
        #expect(Redaction.token("a\"b\\c d{e}f,g_h") == "a\"b\\…,g_h")
    }
}

@Suite("Log throttle", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct LogThrottleTests {
    @Test("one line per interval, with how many were held back since the last")
    func throttle() {
        let throttle = LogThrottle(interval: 60)
        #expect(throttle.admit(now: 100) == 0)
        #expect(throttle.admit(now: 101) == nil)
        #expect(throttle.admit(now: 159.9) == nil)
        #expect(throttle.admit(now: 160) == 2)
        #expect(throttle.admit(now: 500) == 0)
    }
}
