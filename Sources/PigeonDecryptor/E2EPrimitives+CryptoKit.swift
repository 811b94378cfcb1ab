#if canImport(CryptoKit)
import CryptoKit
import Foundation

/// The device's P-256 key, on CryptoKit (iOS, macOS).
struct DeviceKeyAgreement: Sendable {
    let publicKey: Data
    let privateKey: P256.KeyAgreement.PrivateKey

    init(privateKey scalar: Data, publicKey: Data) throws(DecryptionError) {
        do {
            privateKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: scalar)
        } catch {
            throw .badDeviceKey("not a P-256 private scalar")
        }
        guard privateKey.publicKey.x963Representation == publicKey else {
            throw .badDeviceKey("the public key is not the private key's")
        }
        self.publicKey = publicKey
    }

    /// The X coordinate of ECDH with the sender's ephemeral key.
    func sharedSecret(with ephemeralPublicKey: Data) throws(DecryptionError) -> SharedSecret {
        do {
            return try privateKey.sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: ephemeralPublicKey))
        } catch {
            throw .malformedEnvelope("'epk' is not a point on P-256")
        }
    }
}

enum E2EPrimitives {
    static func hkdfSHA256(secret: SharedSecret, salt: Data, info: Data, length: Int) throws(DecryptionError) -> Data {
        secret.hkdfDerivedSymmetricKey(using: SHA256.self, salt: salt, sharedInfo: info, outputByteCount: length)
            .withUnsafeBytes { Data($0) }
    }

    static func openAES128GCM(_ sealed: Data, key: Data, nonce: Data, additionalData: Data) throws(DecryptionError) -> Data {
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: sealed.prefix(sealed.count - 16), tag: sealed.suffix(16))
            return try AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: additionalData)
        } catch {
            throw .authenticationFailed
        }
    }
}
#endif
