import Foundation
import OutboundHTTP
import PigeonCore
import PigeonCrypto
import PushCore
import Synchronization

/// Sends Web Push messages (RFC 8030) over one ``HTTP2Client``: each message encrypted for its
/// subscription (RFC 8291, a fresh key and salt each), VAPID-signed per push service origin
/// (RFC 8292), with `TTL` from the timeout, `Urgency` from the priority and `Topic` from the
/// notification id. A subscription whose endpoint's host is not allowed is never called.
public final class WebPushTransport: Sendable {
    private let client: HTTP2Client
    private let vapid: VAPIDSigner
    private let allowedHosts: WebPushHosts
    private let clock: @Sendable () -> Date

    public init(client: HTTP2Client, vapid: VAPIDSigner, allowedHosts: WebPushHosts, clock: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.vapid = vapid
        self.allowedHosts = allowedHosts
        self.clock = clock
    }

    /// One attempt to deliver `message` to the subscription stored as `token`.
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
        var requests: [HTTP2Client.Request] = []
        var positions: [Int] = []
        for (index, push) in batch.pushes.enumerated() {
            switch request(batch.messages[push.message], token: push.token) {
            case .request(let request):
                requests.append(request)
                positions.append(index)
            case .outcome(let outcome):
                onResult(PushBatchResult(index: index, outcome: outcome, duration: nil))
            }
        }
        await client.send(requests, maxInFlight: maxInFlight) { [self, positions] position, response in
            onResult(PushBatchResult(index: positions[position], outcome: outcome(of: response), duration: try? response.get().duration))
        }
    }

    /// A push's request, or its outcome when it cannot be sent.
    private enum Prepared {
        case request(HTTP2Client.Request)
        case outcome(PushOutcome)
    }

    /// The encrypted, signed request for one subscription, or the outcome when there is none.
    private func request(_ message: PushMessage, token: String) -> Prepared {
        guard let subscription = WebPushSubscription(stored: token) else {
            return .outcome(.tokenDead(reason: "not a Web Push subscription", since: nil))
        }
        guard allowedHosts.allows(host: subscription.host) else {
            return .outcome(.failed(reason: "the subscription's host \(subscription.host) is not in webPushAllowedHosts"))
        }
        let plaintext = WebPushResponse.plaintext(message)
        guard plaintext.count <= WebPushEncryption.maximumPlaintext else {
            return .outcome(.failed(reason: PushMessageError.payloadTooLarge(bytes: plaintext.count, limit: WebPushEncryption.maximumPlaintext).description))
        }
        do {
            guard let publicKey = Base64URL.decode(subscription.p256dh), let auth = Base64URL.decode(subscription.auth) else {
                return .outcome(.tokenDead(reason: "the subscription's keys are not base64url", since: nil))
            }
            let body = try WebPushEncryption.encrypt(plaintext, to: .init(publicKey: publicKey, authSecret: auth),
                                                     serverKey: P256PrivateKey(), salt: RandomBytes.generate(16))
            let ttl = max(0, Int(message.expiresAt.timeIntervalSince(clock()).rounded(.down)))
            let headers = [
                "authorization: \(try vapid.authorization(origin: subscription.origin))",
                "content-encoding: aes128gcm",
                "content-type: application/octet-stream",
                "ttl: \(ttl)",
                "urgency: \(WebPushResponse.urgency(message))",
                "topic: \(WebPushResponse.topic(notificationId: message.notificationId))",
            ]
            return .request(HTTP2Client.Request(url: subscription.endpoint, headerLines: headers, body: body, wantHeaders: ["retry-after"]))
        } catch {
            // A key that is not a point on the curve can never be encrypted to.
            return .outcome(.tokenDead(reason: "cannot encrypt to the subscription: \(error)", since: nil))
        }
    }

    private func outcome(of result: Result<HTTP2Client.Response, HTTP2Client.TransportError>) -> PushOutcome {
        switch result {
        case .success(let response):
            WebPushResponse.classify(status: response.status, retryAfter: response.headers["retry-after"], now: clock())
        case .failure(let error):
            .retry(reason: "transport: \(error.message)", after: nil)
        }
    }
}
