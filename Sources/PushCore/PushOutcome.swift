import Foundation
import PigeonCore

/// What one push attempt came to, for APNs and FCM alike. The engine acts on this alone.
package enum PushOutcome: Sendable, Equatable {
    /// The push service accepted the message (`apns-id` or FCM message name, if given).
    case accepted(id: String?)
    /// The token will never work again: remove the device. `since` is when the service says the
    /// token stopped being valid (APNs 410 timestamp), if it says.
    case tokenDead(reason: String, since: Date?)
    /// A temporary problem: try again, not before `after` when the service said so. `cause`
    /// classifies it for metrics and for the engine's pacing (a throttled service is paused).
    case retry(reason: String, after: Duration?, cause: RetryCause = .unavailable)
    /// Our credentials were refused; refresh them (within the service's limits) and try again.
    case refreshCredentials(reason: String)
    /// A problem retrying cannot fix: the message, the topic, or our configuration.
    case failed(reason: String)
    /// Not sent: the message's time ran out before it could be handed to a connection. Nothing
    /// went on the wire; the delivery takes the expiry path, never a late push.
    case expired
    /// Not sent: no stream took it within its batch's start limit while the message still had
    /// time (its service is slow), or the sender stopped before its turn (the gateway is
    /// stopping). The engine hands the delivery back to the queue unpushed.
    case deferred

    /// The reason an `expired` outcome gives in logs and the delivery's last error.
    package static let expiredReason = "expired before it could be pushed"

    /// A short label for metrics (`accepted`, `token_dead`, `retry`, `refresh_credentials`, `failed`, `expired`).
    package var label: String {
        switch self {
        case .accepted: "accepted"
        case .tokenDead: "token_dead"
        case .retry: "retry"
        case .refreshCredentials: "refresh_credentials"
        case .failed: "failed"
        case .expired: "expired"
        case .deferred: "deferred"
        }
    }
}

extension PushOutcome {
    /// The start of a retry's reason when a service refused credentials that cannot be
    /// refreshed (a static service token): retried later, the device kept, an operator alarmed.
    package static let credentialsRefusedPrefix = "credentials refused: "

    /// The retry reason of a push no stream took in time (a slow service) while others of its
    /// delivery went out.
    package static let notStartedReason = "not started in time: the push service was slow"

    /// Why a retry is needed, as a bounded label for metrics; nil for other outcomes.
    package var retryCause: RetryCause? {
        guard case .retry(_, _, let cause) = self else { return nil }
        return cause
    }
}

/// Why a push is to be retried, decided where the outcome is made (never read back from its
/// reason's text).
package enum RetryCause: String, Sendable, Equatable, CaseIterable {
    /// The request never got an answer (transport error, no access token).
    case connection
    /// The service asked us to slow down (429, quota and token-update limits).
    case throttled
    /// Our static credentials were refused (RuStore's service token): an operator must act.
    case credentials
    /// No stream took the push in time while others of its delivery went out (a slow service).
    case slow
    /// The service is unavailable for now (5xx and other temporary answers).
    case unavailable

    /// The cause a service's own reason for a temporary failure names: its throttling codes
    /// (`TooManyRequests`, `TooManyProviderTokenUpdates`, `QUOTA_EXCEEDED`, `RESOURCE_EXHAUSTED`,
    /// HTTP 429), else unavailable.
    package static func ofServiceReason(_ reason: String) -> RetryCause {
        ["TooManyRequests", "TooManyProviderTokenUpdates", "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED", "HTTP 429"].contains(reason) ? .throttled : .unavailable
    }
}

/// Reads a `Retry-After` header: delta-seconds, or an HTTP date (``HTTPDate``) relative to `now`.
package enum RetryAfter {
    package static func parse(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        guard let date = HTTPDate.parse(value) else { return nil }
        let delay = date.timeIntervalSince(now)
        return .milliseconds(Int64(max(0, delay) * 1000))
    }
}
