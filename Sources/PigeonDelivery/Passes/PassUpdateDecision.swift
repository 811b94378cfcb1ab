import Foundation
import PigeonCore
import PigeonDomain
import PushCore

/// The rules of a pass update push and the fetch that should follow it (CONTRACT §7), pure: the
/// clock reading and the random source come in.
///
/// - A `QUEUED` claim is pushed. A `SENT` claim whose fetch wait ended is pushed again while
///   fewer than `1 + fetchRetries` pushes were accepted, else it is `EXPIRED`.
/// - APNs accepted → `SENT`, the fetch awaited for `fetchTimeout`; a dead token → the device is
///   removed; a temporary refusal → the same state, retried by the back-off schedule until it
///   is used up (then `SENDING_FAILED`); a permanent refusal → `SENDING_FAILED`.
package struct PassUpdatePolicy: Sendable, Equatable {
    /// `passFetchTimeoutSeconds`: how long a device has to fetch after a push.
    package var fetchTimeout: Duration
    /// `passFetchRetries`: pushes after the first one when no fetch comes.
    package var fetchRetries: Int
    /// Back-off for pushes APNs did not take (connection failures, 429, 5xx).
    package var retrySchedule: RetrySchedule

    package init(fetchTimeout: Duration = .seconds(600), fetchRetries: Int = 3,
                retrySchedule: RetrySchedule = RetrySchedule(initialDelay: .seconds(1), maximumDelay: .seconds(300), maximumAttempts: 12)) {
        self.fetchTimeout = fetchTimeout
        self.fetchRetries = fetchRetries
        self.retrySchedule = retrySchedule
    }

    /// What to do with a claim.
    package enum Step: Sendable, Equatable {
        case push
        case expire
    }

    package func step(for claim: ClaimedPassPush) -> Step {
        claim.state == .sent && claim.pushes > fetchRetries ? .expire : .push
    }

    /// The change APNs' answer to a claim's push makes.
    package func change(after outcome: PushOutcome, for claim: ClaimedPassPush, now: Date,
                       random: inout some RandomNumberGenerator) -> PassPushResult.Change {
        switch outcome {
        case .accepted:
            return .sent(fetchDeadline: now.addingTimeInterval(fetchTimeout.inSeconds))
        case .tokenDead(let reason, _):
            return .tokenDead(error: reason)
        case .failed(let reason):
            return .failed(error: reason)
        case .expired:
            // Pass update pushes carry no expiry; should one ever come, it is tried again.
            return retry(claim, reason: PushOutcome.expiredReason, serviceDelay: nil, now: now, random: &random)
        case .deferred:
            return retry(claim, reason: PushOutcome.notStartedReason, serviceDelay: nil, now: now, random: &random)
        case .retry(let reason, let after, _):
            return retry(claim, reason: reason, serviceDelay: after, now: now, random: &random)
        case .refreshCredentials(let reason):
            // A new provider token is signed for the next push; wait at least the minute Apple
            // asks between token updates.
            return retry(claim, reason: reason, serviceDelay: .seconds(60), now: now, random: &random)
        }
    }

    private func retry(_ claim: ClaimedPassPush, reason: String, serviceDelay: Duration?, now: Date,
                       random: inout some RandomNumberGenerator) -> PassPushResult.Change {
        guard let next = retrySchedule.nextAttempt(after: claim.failures + 1, now: now, expiresAt: .distantFuture, perishable: false,
                                                   serviceDelay: serviceDelay, random: &random) else {
            return .failed(error: "APNs did not take the update push after \(claim.failures + 1) attempts: \(reason)")
        }
        return .retry(at: next, error: reason)
    }
}
