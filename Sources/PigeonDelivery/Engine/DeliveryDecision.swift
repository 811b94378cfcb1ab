import Foundation
import PigeonCore
import PushCore

/// Turns the push outcomes of one delivery (one per device of the user) into the delivery's
/// next state. Pure: the clock reading and the random source come in.
///
/// - Any device accepted → `SENT`.
/// - Every device's token is dead (or the user has no device) → `INVALID_SUBSCRIPTION`.
/// - Something temporary and no acceptance → stay `QUEUED` until the retry schedule's next time;
///   `SENDING_FAILED` when the notification is perishable, the attempts are used up or its time
///   is up (the expiry sweep then makes it `EXPIRED` and reports it).
/// - Otherwise (permanent failures) → `SENDING_FAILED`.
/// Devices whose tokens are dead are always reported for removal.
public struct DeliveryDecision: Equatable, Sendable {
    public var state: DeliveryState
    public var nextAttemptAt: Date?
    public var deadDevices: [Int64]
    public var error: String?

    public static func decide(
        outcomes: [(device: Int64, outcome: PushOutcome)], attempt: Int, expiresAt: Date, perishable: Bool,
        now: Date, schedule: RetrySchedule, random: inout some RandomNumberGenerator
    ) -> DeliveryDecision {
        let dead = outcomes.compactMap { entry -> Int64? in
            if case .tokenDead = entry.outcome { return entry.device }
            return nil
        }
        if outcomes.isEmpty {
            return DeliveryDecision(state: .invalidSubscription, deadDevices: [], error: "no subscribed device")
        }
        if outcomes.contains(where: { if case .accepted = $0.outcome { true } else { false } }) {
            return DeliveryDecision(state: .sent, deadDevices: dead)
        }
        if dead.count == outcomes.count {
            return DeliveryDecision(state: .invalidSubscription, deadDevices: dead, error: reason(outcomes.first?.outcome))
        }
        let temporary = outcomes.filter {
            switch $0.outcome {
            case .retry, .refreshCredentials: true
            default: false
            }
        }
        if let first = temporary.first {
            let serviceDelay = temporary.compactMap { entry -> Duration? in
                if case .retry(_, let after) = entry.outcome { return after }
                return nil
            }.max()
            if let next = schedule.nextAttempt(after: attempt, now: now, expiresAt: expiresAt, perishable: perishable, serviceDelay: serviceDelay, random: &random) {
                return DeliveryDecision(state: .queued, nextAttemptAt: next, deadDevices: dead, error: reason(first.outcome))
            }
            // Never EXPIRED here: the expiry sweep does that, in the transaction that writes the
            // bank's report, so every expired delivery is reported.
            return DeliveryDecision(state: .sendingFailed, deadDevices: dead, error: reason(first.outcome))
        }
        let failure = outcomes.first { if case .failed = $0.outcome { true } else { false } }
        return DeliveryDecision(state: .sendingFailed, deadDevices: dead, error: reason(failure?.outcome))
    }

    private static func reason(_ outcome: PushOutcome?) -> String? {
        switch outcome {
        case .tokenDead(let reason, _)?, .retry(let reason, _)?, .refreshCredentials(let reason)?, .failed(let reason)?:
            reason
        case .accepted?, nil:
            nil
        }
    }
}
