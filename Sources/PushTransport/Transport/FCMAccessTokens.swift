import Foundation
import OutboundHTTP
import PigeonCrypto
import PushCore

/// OAuth2 access tokens for FCM from a service account: one cached token shared by every
/// sender, refreshed shortly before it expires by a single request however many senders ask at
/// once (Google's jwt-bearer grant with an RS256 assertion).
public actor FCMAccessTokens {
    /// Why no token could be had.
    public struct TokenError: Error, CustomStringConvertible {
        public var description: String
    }

    private let account: ServiceAccount
    private let tokenURL: String
    private let client: HTTP2Client
    private let policy: AccessTokenPolicy
    private let clock: @Sendable () -> Date
    private var cached: (token: String, expiresAt: Date)?
    private var refreshing: Task<(token: String, expiresAt: Date), any Error>?
    /// Access tokens fetched so far (for metrics and tests).
    public private(set) var fetched = 0

    public init(account: ServiceAccount, tokenURL: String? = nil, client: HTTP2Client, policy: AccessTokenPolicy = AccessTokenPolicy(), clock: @escaping @Sendable () -> Date = Date.init) {
        self.account = account
        self.tokenURL = tokenURL ?? account.tokenURI
        self.client = client
        self.policy = policy
        self.clock = clock
    }

    /// A valid access token, fetching one if the cached token is missing or about to expire.
    public func token() async throws -> String {
        if let cached, !policy.needsRefresh(expiresAt: cached.expiresAt, now: clock()) {
            return cached.token
        }
        if let refreshing {
            return try await refreshing.value.token
        }
        let task = Task { try await self.fetch() }
        refreshing = task
        defer { refreshing = nil }
        let fresh = try await task.value
        cached = fresh
        fetched += 1
        return fresh.token
    }

    /// Drops `token` after FCM refused it (401), so the next call fetches a new one.
    public func invalidate(_ token: String) {
        if cached?.token == token { cached = nil }
    }

    private func fetch() async throws -> (token: String, expiresAt: Date) {
        let now = clock()
        let assertion = try account.assertion(issuedAt: now, audience: tokenURL)
        let body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let response = try await client.send(url: tokenURL, headers: ["content-type": "application/x-www-form-urlencoded"], body: Data(body.utf8))
        struct Answer: Decodable {
            var access_token: String?
            var expires_in: Double?
            var error: String?
            var error_description: String?
        }
        let answer = try? JSONDecoder().decode(Answer.self, from: response.body)
        guard response.status == 200, let token = answer?.access_token else {
            throw TokenError(description: "the token endpoint answered \(response.status): \(answer?.error_description ?? answer?.error ?? "no token")")
        }
        return (token, now.addingTimeInterval(answer?.expires_in ?? 3600))
    }
}
