#if !canImport(CryptoKit)
import Foundation
import PigeonCrypto

/// The device's P-256 key, on OpenSSL (Linux).
struct DeviceKeyAgreement: Sendable {
    let publicKey: Data
    let privateKey: P256PrivateKey

    init(privateKey scalar: Data, publicKey: Data) throws(DecryptionError) {
        do {
            privateKey = try P256PrivateKey(privateScalar: scalar, publicPoint: publicKey)
        } catch {
            throw .badDeviceKey(error.description)
        }
        self.publicKey = publicKey
    }

    /// The X coordinate of ECDH with the sender's ephemeral key.
    func sharedSecret(with ephemeralPublicKey: Data) throws(DecryptionError) -> Data {
        do {
            return try privateKey.sharedSecret(with: P256PublicKey(point: ephemeralPublicKey))
        } catch {
            throw .malformedEnvelope("'epk' is not a point on P-256")
        }
    }
}

enum E2EPrimitives {
    static func hkdfSHA256(secret: Data, salt: Data, info: Data, length: Int) throws(DecryptionError) -> Data {
        do {
            return try HKDFSHA256.derive(salt: salt, inputKeyMaterial: secret, info: info, length: length)
        } catch {
            throw .badDeviceKey("deriving the keys: \(error)")
        }
    }

    static func openAES128GCM(_ sealed: Data, key: Data, nonce: Data, additionalData: Data) throws(DecryptionError) -> Data {
        do {
            return try AES128GCM.open(sealed, key: key, nonce: nonce, additionalData: additionalData)
        } catch {
            throw .authenticationFailed
        }
    }
}
#endif
