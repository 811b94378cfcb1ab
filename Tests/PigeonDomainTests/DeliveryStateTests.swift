import Testing
@testable import PigeonDomain
import PigeonTestSupport

@Suite("Delivery state machine", .timeLimit(.minutes(TestTier.unitTestMinutes)))
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

@Suite("User identifiers", .timeLimit(.minutes(TestTier.unitTestMinutes)))
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
