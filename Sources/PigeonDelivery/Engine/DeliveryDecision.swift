import Foundation
import PigeonDomain
import PushCore

/// Turns the push outcomes of one delivery (one per device still to push) into the delivery's
/// next state and the devices to push again. Pure: the clock reading and the random source come
/// in. Each device has its own outcome; the user's state is derived from them:
///
/// - Any device accepted, now or at an earlier attempt → `SENT`.
/// - Devices that failed temporarily are pushed again at the retry schedule's next time — also
///   when another device accepted (the delivery stays in the queue as SENT for them) — unless
///   the notification is perishable, the attempts are used up or its time is up.
/// - No device accepted: every token dead (or no device at all) → `INVALID_SUBSCRIPTION`; some
///   to retry → `QUEUED`; a push not sent because the notification's time ran out → `QUEUED`
///   with no next attempt, for the expiry sweep to make `EXPIRED` and report (never `EXPIRED`
///   here: the sweep does that, once); otherwise `SENDING_FAILED`.
/// Devices whose tokens are dead are always reported for removal.
package struct DeliveryDecision: Equatable, Sendable {
    package var state: DeliveryState
    /// When to push the ``pendingDevices`` again; `nil` when the delivery leaves the queue.
    package var nextAttemptAt: Date?
    package var pendingDevices: [Int64]
    package var deadDevices: [Int64]
    package var error: String?

    package init(state: DeliveryState, nextAttemptAt: Date? = nil, pendingDevices: [Int64] = [], deadDevices: [Int64],
                error: String? = nil) {
        self.state = state
        self.nextAttemptAt = nextAttemptAt
        self.pendingDevices = pendingDevices
        self.deadDevices = deadDevices
        self.error = error
    }

    package static func decide(
        outcomes: [(device: Int64, outcome: PushOutcome)], alreadySent: Bool = false, attempt: Int, expiresAt: Date,
        perishable: Bool, now: Date, schedule: RetrySchedule, random: inout some RandomNumberGenerator
    ) -> DeliveryDecision {
        let dead = outcomes.compactMap { entry -> Int64? in
            if case .tokenDead = entry.outcome { return entry.device }
            return nil
        }
        let accepted = alreadySent || outcomes.contains { if case .accepted = $0.outcome { true } else { false } }
        let temporary = outcomes.filter {
            switch $0.outcome {
            case .retry, .refreshCredentials: true
            default: false
            }
        }
        var next: Date?
        if !temporary.isEmpty {
            let serviceDelay = temporary.compactMap { entry -> Duration? in
                if case .retry(_, let after, _) = entry.outcome { return after }
                return nil
            }.max()
            next = schedule.nextAttempt(after: attempt, now: now, expiresAt: expiresAt, perishable: perishable,
                                        serviceDelay: serviceDelay, random: &random)
        }
        let pending = next == nil ? [] : temporary.map(\.device)
        let temporaryReason = reason(temporary.first?.outcome)

        if accepted {
            return DeliveryDecision(state: .sent, nextAttemptAt: next, pendingDevices: pending, deadDevices: dead,
                                    error: next == nil ? nil : temporaryReason)
        }
        if outcomes.isEmpty {
            return DeliveryDecision(state: .invalidSubscription, deadDevices: [], error: "no subscribed device")
        }
        if dead.count == outcomes.count {
            return DeliveryDecision(state: .invalidSubscription, deadDevices: dead, error: reason(outcomes.first?.outcome))
        }
        let expired = outcomes.contains { $0.outcome == .expired }
        if expired && next == nil {
            return DeliveryDecision(state: .queued, deadDevices: dead, error: PushOutcome.expiredReason)
        }
        if !temporary.isEmpty {
            if let next {
                return DeliveryDecision(state: .queued, nextAttemptAt: next, pendingDevices: pending, deadDevices: dead,
                                        error: temporaryReason)
            }
            return DeliveryDecision(state: .sendingFailed, deadDevices: dead, error: temporaryReason)
        }
        let failure = outcomes.first { if case .failed = $0.outcome { true } else { false } }
        return DeliveryDecision(state: .sendingFailed, deadDevices: dead, error: reason(failure?.outcome))
    }

    private static func reason(_ outcome: PushOutcome?) -> String? {
        switch outcome {
        case .tokenDead(let reason, _)?, .retry(let reason, _, _)?, .refreshCredentials(let reason)?, .failed(let reason)?:
            reason
        case .expired?:
            PushOutcome.expiredReason
        case .deferred?:
            PushOutcome.notStartedReason
        case .accepted?, nil:
            nil
        }
    }
}
