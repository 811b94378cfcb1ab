import Foundation
import OutboundHTTP
import PushCore

/// Sends pushes to FCM HTTP v1 over one ``HTTP2Client`` with access tokens from
/// ``FCMAccessTokens``. A 401 drops the cached token so the next attempt fetches a new one.
public final class FCMTransport: Sendable {
    private let client: HTTP2Client
    private let endpoint: String
    private let builder: FCMRequestBuilder
    private let tokens: FCMAccessTokens
    private let clock: @Sendable () -> Date

    public init(client: HTTP2Client, endpoint: String = "https://fcm.googleapis.com", projectId: String, tokens: FCMAccessTokens, clock: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = FCMRequestBuilder(projectId: projectId)
        self.tokens = tokens
        self.clock = clock
    }

    /// One attempt to deliver `message` to `registrationToken`.
    public func send(_ message: PushMessage, to registrationToken: String) async -> PushOutcome {
        let request: PushRequest
        do {
            request = try builder.request(for: message, registrationToken: registrationToken, now: clock())
        } catch {
            return .failed(reason: error.description)
        }
        let accessToken: String
        do {
            accessToken = try await tokens.token()
        } catch {
            return .retry(reason: "no access token: \(error)", after: nil)
        }
        var headers = request.headers
        headers["authorization"] = "Bearer \(accessToken)"
        do {
            let response = try await client.send(url: endpoint + request.path, headers: headers, body: request.body, wantHeaders: ["retry-after"])
            let outcome = FCMResponse.classify(status: response.status, body: response.body, retryAfter: response.headers["retry-after"], now: clock())
            if case .refreshCredentials = outcome { await tokens.invalidate(accessToken) }
            return outcome
        } catch let error as HTTP2Client.TransportError {
            return .retry(reason: "transport: \(error.message)", after: nil)
        } catch {
            return .retry(reason: "transport: \(error)", after: nil)
        }
    }
}
