import Foundation

/// When to sign a new APNs provider token (ES256 JWT). Apple refuses tokens older than an hour
/// (`ExpiredProviderToken`) and answers `TooManyProviderTokenUpdates` to a connection whose token
/// changes too often, so one token per key is reused and replaced once it is ``refreshAge`` old.
package struct ProviderTokenPolicy: Sendable, Equatable {
    /// A token this old is replaced before the next request.
    package var refreshAge: TimeInterval
    /// After APNs refuses a token, a new one is signed at once — but not more often than this:
    /// a key refused again and again (wrong key id, team, clock) is not re-signed per push.
    package var rejectionResignInterval: TimeInterval
    /// After `TooManyProviderTokenUpdates`, no token is signed for this long, doubling with each
    /// answer in a row up to ``maximumThrottleBackoff``.
    package var throttleBackoff: TimeInterval
    package var maximumThrottleBackoff: TimeInterval
    /// A previous token is gone back to (after `TooManyProviderTokenUpdates`) only while younger
    /// than this: Apple refuses it at an hour.
    package var usableAge: TimeInterval

    package init(refreshAge: TimeInterval = 50 * 60, rejectionResignInterval: TimeInterval = 60,
                throttleBackoff: TimeInterval = 60, maximumThrottleBackoff: TimeInterval = 20 * 60,
                usableAge: TimeInterval = 55 * 60) {
        self.refreshAge = refreshAge
        self.rejectionResignInterval = rejectionResignInterval
        self.throttleBackoff = throttleBackoff
        self.maximumThrottleBackoff = maximumThrottleBackoff
        self.usableAge = usableAge
    }
}

/// Why a provider token was signed.
package enum ProviderTokenSigning: String, Sendable {
    case first
    /// It reached ``ProviderTokenPolicy/refreshAge``.
    case refresh
    /// APNs refused the previous one.
    case rejected
}

/// The provider token of one key and the decisions about it, as a value: the transport holds it
/// under a lock, tests drive it with explicit times.
package struct ProviderTokenSchedule: Sendable {
    package let policy: ProviderTokenPolicy
    /// The token in use and when it was issued.
    package private(set) var current: (token: String, issuedAt: Date)?
    /// The token before it, gone back to when APNs says tokens change too often.
    private var previous: (token: String, issuedAt: Date)?
    /// Set when the current token was refused and may be replaced.
    private var replaceRejected = false
    private var lastRejectionSigning: Date?
    private var signingPausedUntil: Date?
    private var throttlesInARow = 0
    private var throttledToken: String?

    package init(policy: ProviderTokenPolicy = ProviderTokenPolicy()) {
        self.policy = policy
    }

    /// Before a request: whether a token must be signed now, and why (nil: use ``current``).
    package func signingNeeded(now: Date) -> ProviderTokenSigning? {
        guard let current else { return .first }
        if replaceRejected { return .rejected }
        let age = now.timeIntervalSince(current.issuedAt)
        if age < 0 { return .refresh }
        if let paused = signingPausedUntil, now < paused, age < policy.usableAge { return nil }
        return age >= policy.refreshAge ? .refresh : nil
    }

    /// A token was signed at `now` for `reason`; it becomes the current one.
    package mutating func signed(_ token: String, at now: Date, reason: ProviderTokenSigning) {
        if reason == .rejected {
            lastRejectionSigning = now
            previous = nil
        } else {
            previous = current
        }
        current = (token, now)
        replaceRejected = false
    }

    /// APNs refused `token` (`ExpiredProviderToken`, `InvalidProviderToken`…). Returns whether
    /// it will be replaced before the next request; not more than once per
    /// ``ProviderTokenPolicy/rejectionResignInterval``, nor while signing is paused.
    @discardableResult
    package mutating func rejected(_ token: String, now: Date) -> Bool {
        guard current?.token == token else { return replaceRejected }
        if let paused = signingPausedUntil, now < paused { return false }
        if let last = lastRejectionSigning, now.timeIntervalSince(last) < policy.rejectionResignInterval { return false }
        replaceRejected = true
        return true
    }

    /// APNs answered `TooManyProviderTokenUpdates` to `token`: go back to the previous token
    /// while it is usable, and sign nothing until the returned time. Nil when this changed
    /// nothing: the other answers to requests already in flight with that token.
    package mutating func throttled(_ token: String, now: Date) -> Date? {
        if let paused = signingPausedUntil, now < paused, throttledToken == token { return nil }
        throttledToken = token
        throttlesInARow += 1
        let backoff = min(policy.maximumThrottleBackoff, policy.throttleBackoff * pow(2, Double(min(throttlesInARow - 1, 16))))
        let until = now.addingTimeInterval(backoff)
        signingPausedUntil = until
        if current?.token == token, let previous, now.timeIntervalSince(previous.issuedAt) < policy.usableAge {
            current = previous
            self.previous = nil
        }
        return until
    }

    /// APNs accepted a push: the throttling, if any, is over.
    package mutating func accepted() {
        throttlesInARow = 0
    }
}

/// When to fetch a new FCM OAuth2 access token: shortly before the cached one expires.
package struct AccessTokenPolicy: Sendable, Equatable {
    /// Refresh this long before expiry.
    package var margin: TimeInterval

    package init(margin: TimeInterval = 5 * 60) {
        self.margin = margin
    }

    package func needsRefresh(expiresAt: Date?, now: Date) -> Bool {
        guard let expiresAt else { return true }
        return now.addingTimeInterval(margin) >= expiresAt
    }
}
