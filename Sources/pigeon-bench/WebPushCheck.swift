import Foundation
import PigeonCrypto
import PushCore
import PushTransport

/// Web Push from the command line, for checks by independent implementations (tests/python) and
/// for the cost of one message's encryption on its own.
enum WebPushCheck {
    /// `plaintext` encrypted for the subscription keys (base64url), as the gateway sends it: a fresh
    /// key and salt. Printed base64url.
    static func encrypt(p256dh: String, auth: String, plaintext: String) throws -> String {
        guard let publicKey = Base64URL.decode(p256dh), let secret = Base64URL.decode(auth) else {
            throw CryptoError(operation: "reading the subscription keys", reason: "not base64url")
        }
        let body = try WebPushEncryption.encrypt(Data(plaintext.utf8), to: .init(publicKey: publicKey, authSecret: secret),
                                                 serverKey: P256PrivateKey(), salt: RandomBytes.generate(16))
        return Base64URL.encode(body)
    }

    /// The `Authorization` header the gateway sends to `audience` with the VAPID key at `keyPath`.
    static func vapid(keyPath: String, audience: String, subject: String) throws -> String {
        let signer = try VAPIDSigner(key: PrivateKey(pem: String(contentsOfFile: keyPath, encoding: .utf8)), subject: subject)
        return try signer.authorization(origin: audience)
    }

    /// Microseconds per message over `count` messages of a PIN-code push's size (the ephemeral
    /// key, ECDH, HKDF and AES-GCM of each), and per P-256 key generation plus ECDH alone.
    static func cost(count: Int) throws -> (message: Double, keyAgreement: Double) {
        let subscriber = try P256PrivateKey()
        let publicKey = try subscriber.publicPoint
        let auth = try RandomBytes.generate(16)
        let message = WebPushResponse.plaintext(PushMessage(notificationId: "pin-000001", text: "Код подтверждения 123456", urgency: .high,
                                                            expiresAt: Date()))
        var started = ContinuousClock.now
        for _ in 0..<count {
            _ = try WebPushEncryption.encrypt(message, to: .init(publicKey: publicKey, authSecret: auth), serverKey: P256PrivateKey(),
                                              salt: RandomBytes.generate(16))
        }
        let perMessage = microseconds(ContinuousClock.now - started) / Double(count)
        let peer = try P256PublicKey(point: publicKey)
        started = ContinuousClock.now
        for _ in 0..<count { _ = try P256PrivateKey().sharedSecret(with: peer) }
        return (perMessage, microseconds(ContinuousClock.now - started) / Double(count))
    }

    /// Microseconds per confidential push's sealing (CONTRACT §8: fresh key and salt, ECDH,
    /// HKDF, AES-GCM over a padded PIN-code content), then per step: key generation, ECDH
    /// (the device key parsed each time, as the gateway does), HKDF and AES-GCM.
    static func confidentialCost(count: Int) throws -> [String: Double] {
        let device = try P256PrivateKey().publicPoint
        let content = Data(#"{"notificationId":"pin-000001","text":"Код подтверждения 123456","type":"PIN_CODE","target":"123456"}"#.utf8)
        func time(_ body: () throws -> Void) rethrows -> Double {
            let started = ContinuousClock.now
            for _ in 0..<count { try body() }
            return microseconds(ContinuousClock.now - started) / Double(count)
        }
        let ephemeral = try P256PrivateKey()
        let peer = try P256PublicKey(point: device)
        return [
            "seal": try time { _ = try ConfidentialSealing.seal(content, keyId: "k1", devicePublicKey: device, additionalData: Data("pin-000001".utf8)) },
            "keygen": try time { _ = try P256PrivateKey() },
            "parse": try time { _ = try P256PublicKey(point: device) },
            "ecdh": try time { _ = try ephemeral.sharedSecret(with: peer) },
            "point": try time { _ = try ephemeral.publicPoint },
            "hkdf": time { _ = try? HKDFSHA256.derive(salt: Data(count: 16), inputKeyMaterial: Data(count: 32), info: Data(count: 150), length: 28) },
            "aes": try time { _ = try AES128GCM.seal(Data(count: 256), key: Data(count: 16), nonce: Data(count: 12), additionalData: Data("pin".utf8)) },
            "random": try time { _ = try RandomBytes.generate(16) },
        ]
    }

    private static func microseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
    }
}
