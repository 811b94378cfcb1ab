import Foundation
import OutboundHTTP
import PushCore
import Synchronization

/// What one push service does its own way: build a message's request once, address it to a
/// device, say which credential goes with it and when a refused one can be replaced, and read an
/// answer as a ``PushOutcome``. Everything else — a batch as one submission to the HTTP/2 client,
/// pushes refused for their credential sent once more with the new one, transport failures as
/// retries, single pushes — is ``ServiceTransport``'s, the same for every service, so the
/// engine, its retries and its metrics never change per service.
package protocol PushService: Sendable {
    /// The parts of a message's request that all its devices share.
    associatedtype Prepared: Sendable
    /// What authenticates a request (an access token, a static token; `NoCredential`).
    associatedtype Credential: Equatable & Sendable

    /// A message's shared request parts, built once per notification.
    func prepare(_ message: PushMessage, now: Date) throws(PushMessageError) -> Prepared
    /// One device's request.
    func request(_ prepared: Prepared, token: String, credential: Credential) -> Result<HTTP2Client.Request, RequestRefused>
    /// The credential to send with now, or the outcome every push gets without one.
    func credential() async -> Result<Credential, CredentialUnavailable>
    /// After the service refused `credential`: true when a new one replaces it (the refused
    /// pushes are then sent once more).
    func replace(_ refused: Credential) async -> Bool
    /// The service's answer to a push to `token`.
    func classify(_ response: HTTP2Client.Response, token: String, now: Date) -> PushOutcome
}

/// The credential of a service that signs each request itself (Web Push's VAPID).
package struct NoCredential: Equatable, Sendable {
    package init() {}
}

/// A ``PushService`` over one ``HTTP2Client``.
package final class ServiceTransport<Service: PushService>: Sendable {
    private let client: HTTP2Client
    package let service: Service
    private let clock: @Sendable () -> Date

    package init(client: HTTP2Client, service: Service, clock: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.service = service
        self.clock = clock
    }

    /// The same service (its credentials and their cache) over another client: the urgent
    /// lane's connections.
    package func using(_ client: HTTP2Client) -> ServiceTransport<Service> {
        ServiceTransport(client: client, service: service, clock: clock)
    }

    /// One attempt to deliver `message` to `token`.
    package func send(_ message: PushMessage, to token: String) async -> PushOutcome {
        let outcome = Mutex<PushOutcome>(.failed(reason: "not sent"))
        await send(PushBatch(messages: [message], pushes: [PushBatch.Push(message: 0, token: token)]), maxInFlight: 1) { result in
            outcome.withLock { $0 = result.outcome }
        }
        return outcome.withLock { $0 }
    }

    /// Sends a batch as one submission to the HTTP/2 client, at most `maxInFlight` at once;
    /// `onResult` gets each push's result as it arrives (on the client's thread: it must be
    /// quick). Each message's shared parts are built once.
    package func send(_ batch: PushBatch, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        let now = clock()
        let prepared = batch.messages.map { message in PushMessage.prepared(message) { message throws(PushMessageError) in try service.prepare(message, now: now) } }
        let rounds = BatchRounds<Service.Credential>(
            credential: { [service] in await service.credential() },
            request: { [service] push, credential in
                prepared[push.message].mapError(RequestRefused.init).flatMap { service.request($0, token: push.token, credential: credential) }
            },
            outcome: { [service, clock] response, _, push in
                switch response {
                case .success(let answer): service.classify(answer, token: push.token, now: clock())
                case .failure(let error): .retry(reason: "transport: \(error.message)", after: nil, cause: .connection)
                }
            },
            replace: { [service] refused in await service.replace(refused) },
            deadline: { push in batch.deadline(of: push) })
        await rounds.send(batch.pushes, client: client, maxInFlight: maxInFlight, onResult: onResult)
    }
}

/// A service whose requests are JSON written around the device's token and carry a bearer
/// token (FCM, RuStore, Huawei): its request is the same for all of them.
package protocol BearerTokenService: PushService where Prepared == FCMPreparedMessage, Credential == String {
    /// The base URL of the service's API.
    var endpoint: String { get }
}

extension BearerTokenService {
    package func request(_ prepared: FCMPreparedMessage, token: String, credential: String) -> Result<HTTP2Client.Request, RequestRefused> {
        .success(HTTP2Client.Request(url: endpoint + prepared.path, headerLines: prepared.headerLines + ["authorization: Bearer \(credential)"],
                                     body: prepared.body(registrationToken: token), wantHeaders: ["retry-after"]))
    }
}

/// A bearer-token service whose token is an OAuth access token (FCM, Huawei): a refused one is
/// dropped and the refused pushes go once more with a new one.
package protocol OAuthTokenService: BearerTokenService {
    var tokens: OAuthAccessTokens { get }
}

extension OAuthTokenService {
    package func credential() async -> Result<String, CredentialUnavailable> {
        do {
            return .success(try await tokens.token())
        } catch {
            return .failure(CredentialUnavailable(outcome: .retry(reason: "no access token: \(error)", after: nil, cause: .connection)))
        }
    }

    package func replace(_ refused: String) async -> Bool {
        // The next token() fetches a new access token.
        await tokens.invalidate(refused)
        return true
    }
}
