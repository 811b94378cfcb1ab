import Foundation

/// Opens the confidential pushes sealed to one device key (CONTRACT §8, format `v1`), as a
/// phone's notification service extension or app does: written from the contract alone, apart
/// from the gateway's encryptor.
///
/// ```swift
/// let decryptor = try ConfidentialDecryptor(keyId: "k1", privateKey: scalar, publicKey: point)
/// let content = try decryptor.open(payload: request.content.userInfo)
/// ```
/// On Apple platforms the cryptography is CryptoKit's; elsewhere OpenSSL's (through PigeonCrypto).
package struct ConfidentialDecryptor: Sendable {
    package let keyId: String
    let key: DeviceKeyAgreement

    /// `privateKey`: the 32-byte P-256 scalar; `publicKey`: its 65-byte uncompressed point, as
    /// registered under `keyId`.
    package init(keyId: String, privateKey: Data, publicKey: Data) throws(DecryptionError) {
        self.keyId = keyId
        key = try DeviceKeyAgreement(privateKey: privateKey, publicKey: publicKey)
    }

    /// The content of a push's payload (its `notificationId` and `e2e` members).
    package func open(payload: [AnyHashable: Any]) throws(DecryptionError) -> ConfidentialContent {
        guard let notificationId = payload["notificationId"] as? String else {
            throw .malformedEnvelope("the payload has no 'notificationId'")
        }
        return try open(ConfidentialEnvelope(payload: payload), notificationId: notificationId)
    }

    /// The content of `envelope`, sealed for notification `notificationId`.
    package func open(_ envelope: ConfidentialEnvelope, notificationId: String) throws(DecryptionError) -> ConfidentialContent {
        guard envelope.keyId == keyId else { throw .wrongKey(keyId: envelope.keyId) }
        let secret = try key.sharedSecret(with: envelope.ephemeralPublicKey)
        // info = "pigeon-e2e-v1" 0x00 keyId 0x00 E D
        var info = Data("pigeon-e2e-v1".utf8)
        info.append(0)
        info.append(contentsOf: keyId.utf8)
        info.append(0)
        info.append(envelope.ephemeralPublicKey)
        info.append(key.publicKey)
        let material = try E2EPrimitives.hkdfSHA256(secret: secret, salt: envelope.salt, info: info, length: 28)
        let plaintext = try E2EPrimitives.openAES128GCM(envelope.ciphertext, key: material.prefix(16), nonce: material.suffix(12),
                                                        additionalData: Data(notificationId.utf8))
        let content = try ConfidentialContent(json: Self.unpadded(plaintext))
        guard content.notificationId == notificationId else { throw .malformedContent("sealed for another notification id") }
        return content
    }

    /// The plaintext without its padding: zeros after a single 0x02 delimiter.
    static func unpadded(_ plaintext: Data) throws(DecryptionError) -> Data {
        guard let delimiter = plaintext.lastIndex(where: { $0 != 0 }), plaintext[delimiter] == 0x02 else {
            throw .malformedContent("no 0x02 delimiter before the padding")
        }
        return plaintext[plaintext.startIndex..<delimiter]
    }
}
