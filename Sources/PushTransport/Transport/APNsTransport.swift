import Foundation
import OutboundHTTP
import PigeonCrypto
import Synchronization

/// Sends pushes to APNs over one ``HTTP2Client``. With token authentication it keeps one
/// provider token per key, reused across requests and replaced per ``ProviderTokenPolicy`` —
/// never signed per request. Every answer, and every transport failure, becomes a
/// ``PushOutcome``.
public final class APNsTransport: Sendable {
    public enum Authentication: Sendable {
        /// The client certificate is configured on the ``HTTP2Client``.
        case certificate
        case token(APNsSigningCredentials)
    }

    private struct TokenState {
        var token: String?
        var issuedAt: Date?
        var signed = 0
    }

    private let client: HTTP2Client
    private let endpoint: String
    private let builder: APNsRequestBuilder
    private let authentication: Authentication
    private let policy: ProviderTokenPolicy
    private let clock: @Sendable () -> Date
    private let tokenState = Mutex(TokenState())

    public init(client: HTTP2Client, endpoint: String, topic: String?, authentication: Authentication,
                policy: ProviderTokenPolicy = ProviderTokenPolicy(), clock: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = APNsRequestBuilder(topic: topic)
        self.authentication = authentication
        self.policy = policy
        self.clock = clock
    }

    /// Provider tokens signed so far.
    public var providerTokensSigned: Int { tokenState.withLock { $0.signed } }

    /// One attempt to deliver `message` to `deviceToken`.
    public func send(_ message: PushMessage, to deviceToken: String, apnsId: UUID = UUID()) async -> PushOutcome {
        let request: PushRequest
        do {
            request = try builder.request(for: message, deviceToken: deviceToken, apnsId: apnsId)
        } catch {
            return .failed(reason: error.description)
        }
        var headers = request.headers
        var usedToken: String?
        if case .token(let credentials) = authentication {
            do {
                usedToken = try currentToken(credentials)
            } catch {
                return .failed(reason: "cannot sign the provider token: \(error)")
            }
            headers["authorization"] = "bearer \(usedToken!)"
        }
        let outcome: PushOutcome
        do {
            let response = try await client.send(url: endpoint + request.path, headers: headers, body: request.body, wantHeaders: ["apns-id", "retry-after"])
            outcome = APNsResponse.classify(status: response.status, body: response.body, apnsId: response.headers["apns-id"], retryAfter: response.headers["retry-after"], now: clock())
        } catch let error as HTTP2Client.TransportError {
            return .retry(reason: "transport: \(error.message)", after: nil)
        } catch {
            return .retry(reason: "transport: \(error)", after: nil)
        }
        if case .refreshCredentials = outcome, let usedToken {
            rejected(usedToken)
        }
        return outcome
    }

    private func currentToken(_ credentials: APNsSigningCredentials) throws -> String {
        let now = clock()
        return try tokenState.withLock { state in
            if let token = state.token, policy.beforeRequest(issuedAt: state.issuedAt, now: now) == .reuse {
                return token
            }
            let token = try credentials.providerToken(issuedAt: now)
            state.token = token
            state.issuedAt = now
            state.signed += 1
            return token
        }
    }

    /// APNs refused `token`: drop it if the policy allows a new signature now.
    private func rejected(_ token: String) {
        let now = clock()
        tokenState.withLock { state in
            guard state.token == token, policy.afterRejection(issuedAt: state.issuedAt, now: now) == .sign else { return }
            state.token = nil
            state.issuedAt = nil
        }
    }
}
