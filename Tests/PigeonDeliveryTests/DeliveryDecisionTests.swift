import Foundation
import PigeonCore
import PigeonTestSupport
import PushCore
import Testing
@testable import PigeonDelivery

@Suite("Delivery decision", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct DeliveryDecisionTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    func decide(_ outcomes: [(Int64, PushOutcome)], alreadySent: Bool = false, attempt: Int = 1, expiresIn: TimeInterval = 600,
                perishable: Bool = false) -> DeliveryDecision {
        var random = SeededRandom(seed: 42)
        return DeliveryDecision.decide(outcomes: outcomes.map { (device: $0.0, outcome: $0.1) }, alreadySent: alreadySent, attempt: attempt,
                                       expiresAt: now + expiresIn, perishable: perishable, now: now,
                                       schedule: RetrySchedule(maximumAttempts: 5), random: &random)
    }

    @Test("one accepting device is enough; dead siblings are removed")
    func accepted() {
        let decision = decide([(1, .tokenDead(reason: "Unregistered", since: nil)), (2, .accepted(id: "x"))])
        #expect(decision.state == .sent)
        #expect(decision.deadDevices == [1])
        #expect(decision.nextAttemptAt == nil)
    }

    @Test("a push not sent because its time ran out: QUEUED without a next attempt, for the expiry sweep; another device's acceptance still makes it SENT")
    func expiredBeforeSending() {
        let expired = decide([(1, .expired), (2, .tokenDead(reason: "Unregistered", since: nil))], expiresIn: -1)
        #expect(expired == DeliveryDecision(state: .queued, deadDevices: [2], error: PushOutcome.expiredReason))
        let accepted = decide([(1, .expired), (2, .accepted(id: "x"))], expiresIn: -1)
        #expect(accepted == DeliveryDecision(state: .sent, deadDevices: []))
        // A device to retry cannot be retried once the time is up: the expiry path all the same.
        let retry = decide([(1, .expired), (2, .retry(reason: "ServiceUnavailable", after: nil))], expiresIn: -1)
        #expect(retry.state == .queued && retry.nextAttemptAt == nil && retry.error == PushOutcome.expiredReason)
    }

    @Test("one device accepted and one to retry: SENT, and the other device is pushed again at its time")
    func sentWithADeviceToRetry() {
        let decision = decide([(1, .accepted(id: "x")), (2, .retry(reason: "ServiceUnavailable", after: .seconds(20))), (3, .failed(reason: "x"))])
        #expect(decision.state == .sent)
        #expect(decision.pendingDevices == [2])
        #expect(decision.nextAttemptAt == now + 20)
        #expect(decision.error == "ServiceUnavailable")
        // The retry: the device fails for good → still SENT, out of the queue.
        let final = decide([(2, .failed(reason: "PayloadTooLarge"))], alreadySent: true, attempt: 2)
        #expect(final == DeliveryDecision(state: .sent, deadDevices: []))
        // Or it is dead now: removed, still SENT.
        #expect(decide([(2, .tokenDead(reason: "Unregistered", since: nil))], alreadySent: true, attempt: 2)
                == DeliveryDecision(state: .sent, deadDevices: [2]))
        // Or its device is gone meanwhile: nothing to push, still SENT.
        #expect(decide([], alreadySent: true, attempt: 2) == DeliveryDecision(state: .sent, deadDevices: []))
        // A perishable push is not retried on the other device either.
        #expect(decide([(1, .accepted(id: "x")), (2, .retry(reason: "503", after: nil))], perishable: true)
                == DeliveryDecision(state: .sent, deadDevices: []))
    }

    @Test("no device, or only dead ones, is INVALID_SUBSCRIPTION")
    func invalid() {
        #expect(decide([]).state == .invalidSubscription)
        let decision = decide([(1, .tokenDead(reason: "BadDeviceToken", since: nil)), (2, .tokenDead(reason: "Unregistered", since: nil))])
        #expect(decision.state == .invalidSubscription)
        #expect(decision.deadDevices == [1, 2])
    }

    @Test("temporary trouble stays QUEUED until the retry time, honouring Retry-After")
    func retry() {
        let decision = decide([(1, .retry(reason: "TooManyRequests", after: .seconds(30)))])
        #expect(decision.state == .queued)
        #expect(decision.nextAttemptAt == now + 30)
        #expect(decision.pendingDevices == [1])
        #expect(decision.error == "TooManyRequests")
        // Only the devices in temporary trouble are pushed again, not the one that failed for good.
        let mixed = decide([(1, .failed(reason: "PayloadTooLarge")), (2, .retry(reason: "503", after: nil))])
        #expect(mixed.state == .queued)
        #expect(mixed.pendingDevices == [2])
        #expect(decide([(1, .refreshCredentials(reason: "ExpiredProviderToken"))]).state == .queued)
    }

    @Test("perishable, attempts used up, or time up end the retries")
    func noMoreRetries() {
        #expect(decide([(1, .retry(reason: "503", after: nil))], perishable: true).state == .sendingFailed)
        #expect(decide([(1, .retry(reason: "503", after: nil))], attempt: 5).state == .sendingFailed)
        // Time up: the engine stops; the expiry sweep makes it EXPIRED and reports it to the bank.
        #expect(decide([(1, .retry(reason: "503", after: nil))], expiresIn: -1).state == .sendingFailed)
        #expect(decide([(1, .retry(reason: "503", after: .seconds(900)))]).state == .sendingFailed)
    }

    @Test("permanent failures are SENDING_FAILED with the reason")
    func failed() {
        let decision = decide([(1, .failed(reason: "PayloadTooLarge"))])
        #expect(decision.state == .sendingFailed)
        #expect(decision.error == "PayloadTooLarge")
    }
}
