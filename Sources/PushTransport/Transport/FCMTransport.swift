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
        let outcome = Self.outcome(of: await client.answer(url: endpoint + request.path, headers: headers, body: request.body,
                                                           wantHeaders: ["retry-after"]), now: clock())
        if case .refreshCredentials = outcome { await tokens.invalidate(accessToken) }
        return outcome
    }

    /// The outcome of FCM's answer, or of the transfer's failure.
    private static func outcome(of result: Result<HTTP2Client.Response, HTTP2Client.TransportError>, now: Date) -> PushOutcome {
        switch result {
        case .success(let response):
            FCMResponse.classify(status: response.status, body: response.body, retryAfter: response.headers["retry-after"], now: now)
        case .failure(let error):
            .retry(reason: "transport: \(error.message)", after: nil)
        }
    }

    /// Sends a batch as one submission to the HTTP/2 client, at most `maxInFlight` at once;
    /// `onResult` gets each push's result as it arrives (on the client's thread: it must be
    /// quick). Each message's body is built once around the place of the token. Pushes refused
    /// with 401 are sent once more with a freshly fetched access token.
    public func send(_ batch: PushBatch, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        let now = clock()
        let prepared = batch.messages.map { message in Result { () throws(PushMessageError) in try builder.prepare(message, now: now) } }
        let rounds = BatchRounds<String>(
            credential: { [tokens] in
                do {
                    return .success(try await tokens.token())
                } catch {
                    return .failure(CredentialUnavailable(outcome: .retry(reason: "no access token: \(error)", after: nil)))
                }
            },
            request: { [endpoint] push, accessToken in
                prepared[push.message].map { message in
                    var lines = message.headerLines
                    lines.append("authorization: Bearer \(accessToken)")
                    return HTTP2Client.Request(url: endpoint + message.path, headerLines: lines,
                                               body: message.body(registrationToken: push.token), wantHeaders: ["retry-after"])
                }
            },
            outcome: { [clock] response, _, _ in Self.outcome(of: response, now: clock()) },
            replace: { [tokens] refused in
                // The next token() fetches a new access token.
                await tokens.invalidate(refused)
                return true
            })
        await rounds.send(batch.pushes, client: client, maxInFlight: maxInFlight, onResult: onResult)
    }
}
