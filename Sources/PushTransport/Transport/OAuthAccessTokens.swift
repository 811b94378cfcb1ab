import Foundation
import OutboundHTTP
import PigeonCrypto
import PushCore

/// OAuth2 access tokens for a push service: one cached token shared by every sender, refreshed
/// shortly before it expires (the answer's `expires_in`) by a single request however many
/// senders ask at once. The grant is the service's: FCM's jwt-bearer assertion signed with the
/// service account's key, Huawei's client credentials.
package actor OAuthAccessTokens {
    /// Why no token could be had.
    package struct TokenError: Error, CustomStringConvertible {
        package var description: String
    }

    private let tokenURL: String
    private let client: HTTP2Client
    /// The form body of a token request made at the given time.
    private let grant: @Sendable (Date) throws -> String
    private let policy: AccessTokenPolicy
    private let clock: @Sendable () -> Date
    private var cached: (token: String, expiresAt: Date)?
    private var refreshing: Task<(token: String, expiresAt: Date), any Error>?
    /// Access tokens fetched so far (for metrics and tests).
    package private(set) var fetched = 0

    package init(tokenURL: String, client: HTTP2Client, policy: AccessTokenPolicy = AccessTokenPolicy(),
                clock: @escaping @Sendable () -> Date = Date.init, grant: @escaping @Sendable (Date) throws -> String) {
        self.tokenURL = tokenURL
        self.client = client
        self.grant = grant
        self.policy = policy
        self.clock = clock
    }

    /// FCM's tokens: Google's jwt-bearer grant with an RS256 assertion from `account`.
    package init(account: ServiceAccount, tokenURL: String? = nil, client: HTTP2Client, policy: AccessTokenPolicy = AccessTokenPolicy(),
                clock: @escaping @Sendable () -> Date = Date.init) {
        let url = tokenURL ?? account.tokenURI
        self.init(tokenURL: url, client: client, policy: policy, clock: clock) { now in
            let assertion = try account.assertion(issuedAt: now, audience: url)
            return "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        }
    }

    /// Huawei's tokens: the client-credentials grant with the app's id and secret.
    package init(clientId: String, clientSecret: String, tokenURL: String, client: HTTP2Client,
                policy: AccessTokenPolicy = AccessTokenPolicy(), clock: @escaping @Sendable () -> Date = Date.init) {
        self.init(tokenURL: tokenURL, client: client, policy: policy, clock: clock) { _ in
            "grant_type=client_credentials&client_id=\(Self.formEncoded(clientId))&client_secret=\(Self.formEncoded(clientSecret))"
        }
    }

    /// A valid access token, fetching one if the cached token is missing or about to expire.
    package func token() async throws -> String {
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

    /// Drops `token` after the service refused it (401), so the next call fetches a new one.
    package func invalidate(_ token: String) {
        if cached?.token == token { cached = nil }
    }

    private func fetch() async throws -> (token: String, expiresAt: Date) {
        let now = clock()
        let body = try grant(now)
        let response = try await client.send(url: tokenURL, headers: ["content-type": "application/x-www-form-urlencoded"], body: Data(body.utf8))
        struct Answer: Decodable {
            var access_token: String?
            var expires_in: Double?
            var error_description: String?
        }
        let answer = try? JSONDecoder().decode(Answer.self, from: response.body)
        guard response.status == 200, let token = answer?.access_token else {
            throw TokenError(description: "the token endpoint answered \(response.status): \(answer?.error_description ?? "no token")")
        }
        return (token, now.addingTimeInterval(answer?.expires_in ?? 3600))
    }

    /// `value` as an `application/x-www-form-urlencoded` value.
    static func formEncoded(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}

/// FCM's access tokens (``OAuthAccessTokens/init(account:tokenURL:client:policy:clock:)``).
package typealias FCMAccessTokens = OAuthAccessTokens
