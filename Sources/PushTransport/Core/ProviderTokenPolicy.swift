import Foundation

/// When to sign a new APNs provider token (ES256 JWT). Apple rejects tokens older than an hour
/// (`ExpiredProviderToken`) and answers `TooManyProviderTokenUpdates` to tokens refreshed more
/// often than every 20 minutes, so one token per key is reused and replaced once it is
/// ``refreshAge`` old. After a rejection, a new token is signed only if the current one is at least
/// ``minimumAge`` old: a younger token was refused for another reason (wrong key, team or
/// clock), which a new signature would not fix.
public struct ProviderTokenPolicy: Sendable, Equatable {
    public var refreshAge: TimeInterval
    public var minimumAge: TimeInterval

    public init(refreshAge: TimeInterval = 50 * 60, minimumAge: TimeInterval = 20 * 60) {
        self.refreshAge = refreshAge
        self.minimumAge = minimumAge
    }

    public enum Decision: Sendable, Equatable {
        case reuse
        case sign
    }

    /// Before a request: reuse the token issued at `issuedAt`, or sign one.
    public func beforeRequest(issuedAt: Date?, now: Date) -> Decision {
        guard let issuedAt else { return .sign }
        let age = now.timeIntervalSince(issuedAt)
        return age >= refreshAge || age < 0 ? .sign : .reuse
    }

    /// After APNs refused the token issued at `issuedAt`.
    public func afterRejection(issuedAt: Date?, now: Date) -> Decision {
        guard let issuedAt else { return .sign }
        return now.timeIntervalSince(issuedAt) >= minimumAge ? .sign : .reuse
    }
}

/// When to fetch a new FCM OAuth2 access token: shortly before the cached one expires.
public struct AccessTokenPolicy: Sendable, Equatable {
    /// Refresh this long before expiry.
    public var margin: TimeInterval

    public init(margin: TimeInterval = 5 * 60) {
        self.margin = margin
    }

    public func needsRefresh(expiresAt: Date?, now: Date) -> Bool {
        guard let expiresAt else { return true }
        return now.addingTimeInterval(margin) >= expiresAt
    }
}
