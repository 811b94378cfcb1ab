import Foundation
import OutboundHTTP
import PushCore

/// Sends pushes to RuStore push over one ``HTTP2Client`` with the project's static service token
/// (`Authorization: Bearer`, made in the RuStore console; nothing to refresh). A push refused
/// for that token is retried later and its device kept; each refusal is reported through
/// `onCredentialsRefused` so the operator hears of it.
public final class RuStoreTransport: Sendable {
    private let client: HTTP2Client
    private let endpoint: String
    private let builder: RuStoreRequestBuilder
    private let serviceToken: String
    private let clock: @Sendable () -> Date
    private let onCredentialsRefused: @Sendable (String) -> Void

    public init(client: HTTP2Client, endpoint: String = "https://vkpns.rustore.ru", projectId: String, serviceToken: String,
                clock: @escaping @Sendable () -> Date = Date.init, onCredentialsRefused: @escaping @Sendable (String) -> Void = { _ in }) {
        self.client = client
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = RuStoreRequestBuilder(projectId: projectId)
        self.serviceToken = serviceToken
        self.clock = clock
        self.onCredentialsRefused = onCredentialsRefused
    }

    /// One attempt to deliver `message` to `token`.
    public func send(_ message: PushMessage, to token: String) async -> PushOutcome {
        let prepared: FCMPreparedMessage
        do {
            prepared = try builder.prepare(message, now: clock())
        } catch {
            return .failed(reason: error.description)
        }
        return outcome(of: await client.answer(url: endpoint + prepared.path, headers: prepared.headers.merging(["authorization": "Bearer \(serviceToken)"]) { $1 },
                                               body: prepared.body(registrationToken: token), wantHeaders: ["retry-after"]))
    }

    /// Sends a batch as one submission to the HTTP/2 client, at most `maxInFlight` at once;
    /// `onResult` gets each push's result as it arrives (on the client's thread: it must be quick).
    public func send(_ batch: PushBatch, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        let now = clock()
        let prepared = batch.messages.map { message in Result { () throws(PushMessageError) in try builder.prepare(message, now: now) } }
        let rounds = BatchRounds<String>(
            credential: { [serviceToken] in .success(serviceToken) },
            request: { [endpoint] push, serviceToken in
                prepared[push.message].map { message in
                    var lines = message.headerLines
                    lines.append("authorization: Bearer \(serviceToken)")
                    return HTTP2Client.Request(url: endpoint + message.path, headerLines: lines,
                                               body: message.body(registrationToken: push.token), wantHeaders: ["retry-after"])
                }
            },
            outcome: { [self] response, _, _ in outcome(of: response) },
            // A static token is never replaced: refused pushes come back as retries, not rounds.
            replace: { _ in false })
        await rounds.send(batch.pushes, client: client, maxInFlight: maxInFlight, onResult: onResult)
    }

    private func outcome(of result: Result<HTTP2Client.Response, HTTP2Client.TransportError>) -> PushOutcome {
        switch result {
        case .success(let response):
            let outcome = RuStoreResponse.classify(status: response.status, body: response.body,
                                                   retryAfter: response.headers["retry-after"], now: clock())
            if outcome.retryCause == "credentials", case .retry(let reason, _) = outcome { onCredentialsRefused(reason) }
            return outcome
        case .failure(let error):
            return .retry(reason: "transport: \(error.message)", after: nil)
        }
    }
}
