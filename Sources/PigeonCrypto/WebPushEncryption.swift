import Foundation

/// Message encryption for Web Push (RFC 8291, the `aes128gcm` content coding of RFC 8188), step
/// by step as RFC 8291 §3.4 gives them: ECDH between a fresh application-server key and the
/// browser's key, HKDF with the browser's auth secret, then one record sealed with AES-128-GCM.
/// The ephemeral key and the salt are parameters so that the RFC's worked example (its
/// appendix A) can be reproduced byte for byte; the gateway draws both afresh per message.
package enum WebPushEncryption {
    /// The record size written in the header; one record of at most this is sent.
    package static let recordSize = 4096
    /// The most plaintext one record carries: 4096 − 86 (header) − 16 (tag) − 1 (delimiter).
    package static let maximumPlaintext = 3993

    /// What to encrypt to: the subscription's `keys.p256dh` (65 bytes) and `keys.auth` (16 bytes).
    package struct Subscriber: Sendable {
        package var publicKey: Data
        package var authSecret: Data

        package init(publicKey: Data, authSecret: Data) {
            self.publicKey = publicKey
            self.authSecret = authSecret
        }
    }

    /// The request body for `plaintext`: salt ‖ record size ‖ key id length ‖ the application
    /// server's public key ‖ the sealed record (plaintext ‖ 0x02).
    package static func encrypt(_ plaintext: Data, to subscriber: Subscriber, serverKey: P256PrivateKey, salt: Data) throws(CryptoError) -> Data {
        guard plaintext.count <= maximumPlaintext else {
            throw CryptoError(operation: "encrypting a Web Push message", reason: "\(plaintext.count) bytes is more than the \(maximumPlaintext) one record carries")
        }
        guard salt.count == 16, subscriber.authSecret.count == 16 else {
            throw CryptoError(operation: "encrypting a Web Push message", reason: "the salt and the auth secret are 16 bytes")
        }
        let serverPublic = try serverKey.publicPoint
        let keys = try derive(subscriberPublic: subscriber.publicKey, serverPublic: serverPublic, authSecret: subscriber.authSecret, salt: salt,
                              sharedSecret: try serverKey.sharedSecret(with: P256PublicKey(point: subscriber.publicKey)))
        var record = plaintext
        record.append(0x02)
        return header(salt: salt, keyId: serverPublic) + (try AES128GCM.seal(record, key: keys.contentKey, nonce: keys.nonce))
    }

    /// Decrypts a body made by ``encrypt(_:to:serverKey:salt:)`` with the subscriber's private
    /// key (the simulator plays the browser with it).
    package static func decrypt(_ body: Data, subscriberKey: P256PrivateKey, authSecret: Data) throws(CryptoError) -> Data {
        let bytes = Array(body)
        guard bytes.count >= 21 + 16 else { throw CryptoError(operation: "decrypting a Web Push message", reason: "too short") }
        let salt = Data(bytes[0..<16])
        let idLength = Int(bytes[20])
        guard idLength == 65, bytes.count >= 21 + idLength + 17 else {
            throw CryptoError(operation: "decrypting a Web Push message", reason: "the key id is not a P-256 point")
        }
        let serverPublic = Data(bytes[21..<(21 + idLength)])
        let keys = try derive(subscriberPublic: try subscriberKey.publicPoint, serverPublic: serverPublic, authSecret: authSecret, salt: salt,
                              sharedSecret: try subscriberKey.sharedSecret(with: P256PublicKey(point: serverPublic)))
        var record = try AES128GCM.open(Data(bytes[(21 + idLength)...]), key: keys.contentKey, nonce: keys.nonce)
        // Padding (zeros) after the content, then the last record's delimiter, 0x02.
        while record.last == 0 { record.removeLast() }
        guard record.last == 0x02 else { throw CryptoError(operation: "decrypting a Web Push message", reason: "no last-record delimiter") }
        record.removeLast()
        return record
    }

    /// The keys of RFC 8291 §3.4.
    package struct Keys: Sendable {
        package var contentKey: Data
        package var nonce: Data
    }

    package static func derive(subscriberPublic: Data, serverPublic: Data, authSecret: Data, salt: Data, sharedSecret: Data) throws(CryptoError) -> Keys {
        // PRK_key = HMAC-SHA-256(auth_secret, ecdh_secret)
        let keyPRK = try HMACSHA256.authenticate(key: authSecret, data: sharedSecret)
        // IKM = HMAC-SHA-256(PRK_key, "WebPush: info" ‖ 0x00 ‖ ua_public ‖ as_public ‖ 0x01)
        let ikm = try HMACSHA256.authenticate(key: keyPRK, data: Data("WebPush: info".utf8) + [0] + subscriberPublic + serverPublic + [1])
        // PRK = HMAC-SHA-256(salt, IKM)
        let prk = try HMACSHA256.authenticate(key: salt, data: ikm)
        let contentKey = try HMACSHA256.authenticate(key: prk, data: Data("Content-Encoding: aes128gcm".utf8) + [0, 1]).prefix(16)
        let nonce = try HMACSHA256.authenticate(key: prk, data: Data("Content-Encoding: nonce".utf8) + [0, 1]).prefix(12)
        return Keys(contentKey: Data(contentKey), nonce: Data(nonce))
    }

    static func header(salt: Data, keyId: Data) -> Data {
        let size = UInt32(recordSize)
        return salt + [UInt8(size >> 24), UInt8((size >> 16) & 0xFF), UInt8((size >> 8) & 0xFF), UInt8(size & 0xFF), UInt8(keyId.count)] + keyId
    }
}
