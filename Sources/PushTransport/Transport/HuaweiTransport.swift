import Foundation
import OutboundHTTP
import PushCore
import Synchronization

/// Sends pushes to Huawei Push Kit over one ``HTTP2Client``, one token per request, with access
/// tokens from ``OAuthAccessTokens`` (client credentials). An expired or refused access token
/// (80200003, 80200001, HTTP 401) is dropped and the refused pushes go once more with a new one.
public final class HuaweiTransport: Sendable {
    private let client: HTTP2Client
    private let endpoint: String
    private let builder: HuaweiRequestBuilder
    private let tokens: OAuthAccessTokens
    private let clock: @Sendable () -> Date

    public init(client: HTTP2Client, endpoint: String = "https://push-api.cloud.huawei.com", appId: String, tokens: OAuthAccessTokens,
                clock: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = HuaweiRequestBuilder(appId: appId)
        self.tokens = tokens
        self.clock = clock
    }

    /// One attempt to deliver `message` to `token`.
    public func send(_ message: PushMessage, to token: String) async -> PushOutcome {
        let outcome = Mutex<PushOutcome>(.failed(reason: "not sent"))
        await send(PushBatch(messages: [message], pushes: [PushBatch.Push(message: 0, token: token)]), maxInFlight: 1) { result in
            outcome.withLock { $0 = result.outcome }
        }
        return outcome.withLock { $0 }
    }

    /// Sends a batch as one submission to the HTTP/2 client, at most `maxInFlight` at once;
    /// `onResult` gets each push's result as it arrives (on the client's thread: it must be quick).
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
            outcome: { [clock] response, _, push in
                switch response {
                case .success(let answer):
                    HuaweiResponse.classify(status: answer.status, body: answer.body, token: push.token,
                                            retryAfter: answer.headers["retry-after"], now: clock())
                case .failure(let error):
                    .retry(reason: "transport: \(error.message)", after: nil)
                }
            },
            replace: { [tokens] refused in
                await tokens.invalidate(refused)
                return true
            })
        await rounds.send(batch.pushes, client: client, maxInFlight: maxInFlight, onResult: onResult)
    }
}
