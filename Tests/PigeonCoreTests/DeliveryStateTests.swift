import Testing
@testable import PigeonCore

@Suite("Delivery state machine")
struct DeliveryStateTests {
    @Test("the happy path moves forward")
    func happyPath() {
        #expect(DeliveryState.queued.canAdvance(to: .sent))
        #expect(DeliveryState.sent.canAdvance(to: .delivered))
        #expect(DeliveryState.delivered.canAdvance(to: .read))
    }

    @Test("no state moves backwards or leaves a final state")
    func neverBackwards() {
        #expect(!DeliveryState.sent.canAdvance(to: .queued))
        #expect(!DeliveryState.delivered.canAdvance(to: .sent))
        #expect(!DeliveryState.read.canAdvance(to: .delivered))
        #expect(!DeliveryState.delivered.canAdvance(to: .expired))
        for final in DeliveryState.allCases where final.isFinal {
            for next in DeliveryState.allCases {
                #expect(!final.canAdvance(to: next), "\(final) → \(next)")
            }
        }
        for state in DeliveryState.allCases {
            #expect(!state.canAdvance(to: state))
            #expect(!state.canAdvance(to: .queued))
        }
    }

    @Test("an open before the delivery ack lands on READ")
    func openedBeforeDelivered() {
        #expect(DeliveryState.queued.canAdvance(to: .read))
        #expect(DeliveryState.sent.canAdvance(to: .read))
    }

    @Test("transport outcomes only leave QUEUED")
    func transportOutcomes() {
        for outcome in [DeliveryState.sent, .sendingFailed, .invalidSubscription] {
            #expect(DeliveryState.queued.canAdvance(to: outcome))
            #expect(!DeliveryState.sent.canAdvance(to: outcome))
        }
    }

    @Test("raw values are the contract's names")
    func rawValues() {
        #expect(DeliveryState.allCases.map(\.rawValue) == ["QUEUED", "SENT", "DELIVERED", "READ", "SENDING_FAILED", "INVALID_SUBSCRIPTION", "EXPIRED"])
    }
}

@Suite("User identifiers")
struct UserIdentifiersTests {
    @Test("case-insensitive ids fold and de-duplicate, first spelling kept")
    func caseInsensitive() {
        let ids = UserIdentifiers(caseInsensitive: true)
        #expect(ids.unique(["Alice", "bob", "ALICE", "Bob", "carol"]) == ["Alice", "bob", "carol"])
        #expect(ids.comparable("ÄLICE") == "älice")
    }

    @Test("case-sensitive ids only drop exact repeats")
    func caseSensitive() {
        let ids = UserIdentifiers(caseInsensitive: false)
        #expect(ids.unique(["Alice", "alice", "Alice"]) == ["Alice", "alice"])
    }

    @Test("without repeats the list comes back as it is; repeats anywhere keep the first occurrence in order")
    func repeatsAnywhere() {
        let ids = UserIdentifiers(caseInsensitive: false)
        #expect(ids.unique(["a", "b", "c"]) == ["a", "b", "c"])
        #expect(ids.unique(["a", "b", "a", "c", "b", "d"]) == ["a", "b", "c", "d"])
        #expect(ids.unique(["x", "x", "x"]) == ["x"])
        #expect(ids.unique([]) == [])
    }
}

@Suite("Logging")
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
    }
}

@Suite("Log throttle")
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
