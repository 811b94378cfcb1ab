import Foundation
import PigeonCrypto
import Synchronization

/// A Web Push service (RFC 8030) that also plays the browsers: `POST
/// /simulator/webpush/subscriptions` makes a subscription (a P-256 key pair and an auth secret
/// kept here) and answers it as the Push API would (`{"endpoint", "keys": {"p256dh", "auth"}}`);
/// `POST /webpush/<id>` takes a message for it, checks VAPID (RFC 8292: an ES256 token for this
/// origin, expiring within 24 hours, with a contact, signed by the key it names) and decrypts it
/// with the subscription's private key (RFC 8291), recording the plaintext — so a credential-free
/// run proves the encryption end to end. 201 accepted; 410 for a subscription that is gone; 413
/// over 4096 bytes; fault rules apply per subscription id.
package final class WebPushSimulator: Sendable {
    /// A message the simulator decrypted.
    package struct Delivery: Sendable, Equatable {
        package var subscriptionId: String
        package var plaintext: Data
        /// When the simulator accepted it.
        package var receivedAt = Date()
        package var ttl: String?
        package var urgency: String?
        package var topic: String?
    }

    private struct Subscriber {
        var key: P256PrivateKey
        var auth: Data
    }

    private struct State {
        var faults = FaultRules()
        var subscribers: [String: Subscriber] = [:]
        var delivered = DeliveryLog<Delivery>()
        var refusedVAPID = 0
    }

    private let state = Mutex(State())
    private let clock: @Sendable () -> Date

    package init(clock: @escaping @Sendable () -> Date = Date.init) {
        self.clock = clock
    }

    package func setFaults(_ faults: FaultRules) {
        state.withLock { $0.faults = faults }
    }

    package var deliveries: [Delivery] { state.withLock { $0.delivered.entries } }
    /// Messages refused for their VAPID token.
    package var vapidRefusals: Int { state.withLock { $0.refusedVAPID } }

    /// A new subscription at `baseURL`, as the browser's Push API gives it to the page (JSON).
    package func subscribe(baseURL: String) throws -> Data {
        let key = try P256PrivateKey()
        let auth = try RandomBytes.generate(16)
        let id = UUID().uuidString.lowercased()
        state.withLock { $0.subscribers[id] = Subscriber(key: key, auth: auth) }
        let object: [String: Any] = ["endpoint": "\(baseURL)/webpush/\(id)",
                                     "keys": ["p256dh": Base64URL.encode(try key.publicPoint), "auth": Base64URL.encode(auth)]]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// `id` is the path below `/webpush/`; `origin` this server's `https://host:port`.
    package func handle(_ request: H2Server.Request, id: String, origin: String) -> H2Server.Response {
        guard request.method == "POST" else { return .json(405, #"{"error":"use POST"}"#) }
        guard let subscriber = state.withLock({ $0.subscribers[id] }) else { return .json(410, #"{"error":"subscription gone"}"#) }
        guard request.headers["ttl"].flatMap(Int.init) != nil else { return .json(400, #"{"error":"TTL header required"}"#) }
        guard request.headers["content-encoding"] == "aes128gcm" else { return .json(415, #"{"error":"Content-Encoding must be aes128gcm"}"#) }
        guard request.body.count <= 4096 else { return .json(413, #"{"error":"payload too large"}"#) }
        guard verifyVAPID(request.headers["authorization"], origin: origin) else {
            state.withLock { $0.refusedVAPID += 1 }
            return .json(403, #"{"error":"invalid VAPID token"}"#)
        }
        guard let plaintext = try? WebPushEncryption.decrypt(request.body, subscriberKey: subscriber.key, authSecret: subscriber.auth) else {
            return .json(400, #"{"error":"cannot decrypt"}"#)
        }
        switch state.withLock({ $0.faults.next(for: id) }) {
        case .unregistered?, .badDeviceToken?:
            state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
            return .json(410, #"{"error":"subscription gone"}"#)
        case .tooManyRequests?:
            var response = H2Server.Response.json(429, #"{"error":"too many requests"}"#)
            response.headers["retry-after"] = "1"
            return response
        case .serviceUnavailable?, .internalError?:
            return .json(503, #"{"error":"unavailable"}"#)
        case .dropConnection?:
            return H2Server.Response(status: 0, action: .dropConnection)
        case .rejected?:
            return .json(413, #"{"error":"payload too large"}"#)
        default:
            state.withLock {
                $0.delivered.append(Delivery(subscriptionId: id, plaintext: plaintext, ttl: request.headers["ttl"],
                                             urgency: request.headers["urgency"], topic: request.headers["topic"]))
            }
            var response = H2Server.Response(status: 201, headers: [:], body: Data())
            response.headers["location"] = "\(origin)/webpush/messages/\(UUID().uuidString.lowercased())"
            return response
        }
    }

    /// `vapid t=<JWT>, k=<key>`: the token verifies with `k`, is for `origin`, expires within
    /// 24 hours and names a contact.
    private func verifyVAPID(_ header: String?, origin: String) -> Bool {
        guard let header, header.hasPrefix("vapid ") else { return false }
        var fields: [String: String] = [:]
        for part in header.dropFirst(6).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        guard let token = fields["t"], let k = fields["k"].flatMap(Base64URL.decode), let key = try? PublicKey(p256Point: k),
              let verified = JSONWebToken.verify(token, key: key), verified.signatureValid,
              verified.header["alg"] as? String == "ES256", verified.claims["aud"] as? String == origin,
              let expiry = (verified.claims["exp"] as? NSNumber)?.doubleValue,
              let subject = verified.claims["sub"] as? String, subject.hasPrefix("mailto:") || subject.hasPrefix("https:")
        else { return false }
        let now = clock().timeIntervalSince1970
        return expiry > now && expiry <= now + 24 * 3600
    }
}
