import Foundation
import OutboundHTTP
import PigeonDomain
import PigeonCrypto
import PushCore

/// Web Push (RFC 8030) as a ``PushService``: each message encrypted for its subscription (RFC
/// 8291, a fresh key and salt each), VAPID-signed per push service origin (RFC 8292), with `TTL`
/// from the timeout, `Urgency` from the priority and `Topic` from the notification id. A
/// subscription whose endpoint's host is not allowed is never called.
package struct WebPushService: PushService {
    /// A message's plaintext (and its declarative form, when the app sends one) and the headers
    /// all its subscriptions share.
    package struct Prepared: Sendable {
        var plaintext: Data
        var declarativePlaintext: Data?
        var headerLines: [String]
    }

    /// Safari's declarative Web Push for an app (`webPushNavigate`, `webPushTitle`,
    /// `webPushDeclarative`, `webPushAppleHosts`).
    package struct Declarative: Sendable, Equatable {
        /// Whose subscriptions get it: Apple's push service's only, or every one.
        package enum Scope: String, Sendable, Equatable {
            case apple
            case all
        }

        package var scope: Scope
        /// The hosts of Apple's Web Push service (`*.push.apple.com`).
        package var appleHosts: WebPushHosts
        package var title: String
        /// The page a notification opens when its target is not an https URL.
        package var navigate: String

        package init(scope: Scope, appleHosts: WebPushHosts, title: String, navigate: String) {
            self.scope = scope
            self.appleHosts = appleHosts
            self.title = title
            self.navigate = navigate
        }

        func serves(_ subscription: WebPushSubscription) -> Bool {
            scope == .all || appleHosts.allows(subscription)
        }
    }

    private let vapid: VAPIDSigner
    private let allowedHosts: WebPushHosts
    private let declarative: Declarative?

    package init(vapid: VAPIDSigner, allowedHosts: WebPushHosts, declarative: Declarative? = nil) {
        self.vapid = vapid
        self.allowedHosts = allowedHosts
        self.declarative = declarative
    }

    package func prepare(_ message: PushMessage, now: Date) throws(PushMessageError) -> Prepared {
        let plaintext = WebPushResponse.plaintext(message)
        let declarativePlaintext = declarative.map { WebPushResponse.declarativePlaintext(message, title: $0.title, navigate: $0.navigate) }
        let largest = max(plaintext.count, declarativePlaintext?.count ?? 0)
        guard largest <= WebPushEncryption.maximumPlaintext else {
            throw .payloadTooLarge(bytes: largest, limit: WebPushEncryption.maximumPlaintext)
        }
        let ttl = max(0, Int(message.expiresAt.timeIntervalSince(now).rounded(.down)))
        return Prepared(plaintext: plaintext, declarativePlaintext: declarativePlaintext, headerLines: [
            "content-encoding: aes128gcm",
            "content-type: application/octet-stream",
            "ttl: \(ttl)",
            "urgency: \(WebPushResponse.urgency(message))",
            "topic: \(WebPushResponse.topic(notificationId: message.notificationId))",
        ])
    }

    /// The message encrypted for the subscription stored as `token`, signed for its origin.
    package func request(_ prepared: Prepared, token: String, credential: NoCredential) -> Result<HTTP2Client.Request, RequestRefused> {
        guard let subscription = WebPushSubscription(stored: token) else {
            return .failure(RequestRefused(outcome: .tokenDead(reason: "not a Web Push subscription", since: nil)))
        }
        guard allowedHosts.allows(subscription) else {
            return .failure(RequestRefused(outcome: .failed(reason: "the subscription's host \(subscription.host) is not in webPushAllowedHosts")))
        }
        guard let publicKey = Base64URL.decode(subscription.p256dh), let auth = Base64URL.decode(subscription.auth) else {
            return .failure(RequestRefused(outcome: .tokenDead(reason: "the subscription's keys are not base64url", since: nil)))
        }
        let body: Data
        do {
            let plaintext = declarative.map { $0.serves(subscription) } == true ? prepared.declarativePlaintext ?? prepared.plaintext : prepared.plaintext
            body = try WebPushEncryption.encrypt(plaintext, to: .init(publicKey: publicKey, authSecret: auth),
                                                 serverKey: P256PrivateKey(), salt: RandomBytes.generate(16))
        } catch {
            // A key that is not a point on the curve can never be encrypted to.
            return .failure(RequestRefused(outcome: .tokenDead(reason: "cannot encrypt to the subscription: \(error)", since: nil)))
        }
        do {
            let authorization = try vapid.authorization(origin: subscription.origin)
            return .success(HTTP2Client.Request(url: subscription.endpoint, headerLines: prepared.headerLines + ["authorization: \(authorization)"],
                                                body: body, wantHeaders: ["retry-after"]))
        } catch {
            return .failure(RequestRefused(outcome: .failed(reason: "cannot sign the VAPID token: \(error)")))
        }
    }

    package func credential() async -> Result<NoCredential, CredentialUnavailable> { .success(NoCredential()) }

    package func replace(_ refused: NoCredential) async -> Bool { false }

    package func classify(_ response: HTTP2Client.Response, token: String, now: Date) -> PushOutcome {
        WebPushResponse.classify(status: response.status, retryAfter: response.headers["retry-after"], now: now)
    }
}

/// Sends Web Push messages.
package typealias WebPushTransport = ServiceTransport<WebPushService>
