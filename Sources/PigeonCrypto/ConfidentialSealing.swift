import Foundation

/// The `v1` encryption of a confidential notification to a device's P-256 key, step by step as
/// CONTRACT §8 gives it: ECDH between a fresh ephemeral key `E` and the device key `D`, HKDF-SHA-256
/// over the shared X coordinate (salt: 16 random bytes; info: "pigeon-e2e-v1" 0x00 keyId 0x00 E D)
/// to a 16-byte AES key and a 12-byte nonce, and AES-128-GCM over the padded plaintext with the
/// notification id as additional data.
///
/// The decryptor a phone runs is written apart from this (module `PigeonDecryptor`, and an
/// independent one in Python): a mistake here shows as a push nobody opens.
package enum ConfidentialSealing {
    /// The HKDF `info` label.
    package static let label = "pigeon-e2e-v1"
    /// Plaintexts are padded to a multiple of this, so a code's length does not show.
    package static let paddingBlock = 256

    /// What travels in the envelope besides the key id.
    package struct Sealed: Sendable, Equatable {
        /// `E`, uncompressed (65 bytes).
        package var ephemeralPublicKey: Data
        package var salt: Data
        /// Ciphertext ‖ 16-byte tag.
        package var ciphertext: Data
    }

    /// Seals `content` (the notification's JSON) to `devicePublicKey`: pads it, derives the keys,
    /// encrypts. `ephemeral` and `salt` are parameters so that vectors are reproducible; the
    /// gateway draws both afresh for every push (``seal(_:keyId:devicePublicKey:additionalData:)``).
    package static func seal(_ content: Data, keyId: String, devicePublicKey: Data, additionalData: Data,
                            ephemeral: P256PrivateKey, salt: Data) throws(CryptoError) -> Sealed {
        guard salt.count == 16 else { throw CryptoError(operation: "sealing a confidential notification", reason: "the salt is 16 bytes") }
        let deviceKey = try P256PublicKey(point: devicePublicKey)
        let ephemeralPublic = try ephemeral.publicPoint
        let secret = try ephemeral.sharedSecret(with: deviceKey)
        let keys = try derive(sharedSecret: secret, salt: salt, keyId: keyId, ephemeralPublicKey: ephemeralPublic, devicePublicKey: devicePublicKey)
        let ciphertext = try AES128GCM.seal(padded(content), key: keys.key, nonce: keys.nonce, additionalData: additionalData)
        return Sealed(ephemeralPublicKey: ephemeralPublic, salt: salt, ciphertext: ciphertext)
    }

    /// ``seal(_:keyId:devicePublicKey:additionalData:ephemeral:salt:)`` with a fresh ephemeral key
    /// and salt.
    package static func seal(_ content: Data, keyId: String, devicePublicKey: Data, additionalData: Data) throws(CryptoError) -> Sealed {
        try seal(content, keyId: keyId, devicePublicKey: devicePublicKey, additionalData: additionalData,
                 ephemeral: P256PrivateKey(), salt: RandomBytes.generate(16))
    }

    /// The content, then 0x02, then zeros up to the next multiple of ``paddingBlock``.
    static func padded(_ content: Data) -> Data {
        var bytes = content
        bytes.append(0x02)
        let remainder = bytes.count % paddingBlock
        if remainder != 0 { bytes.append(contentsOf: repeatElement(0, count: paddingBlock - remainder)) }
        return bytes
    }

    static func derive(sharedSecret: Data, salt: Data, keyId: String, ephemeralPublicKey: Data, devicePublicKey: Data) throws(CryptoError) -> (key: Data, nonce: Data) {
        var info = Data(label.utf8)
        info.append(0)
        info.append(contentsOf: keyId.utf8)
        info.append(0)
        info.append(ephemeralPublicKey)
        info.append(devicePublicKey)
        let material = try HKDFSHA256.derive(salt: salt, inputKeyMaterial: sharedSecret, info: info, length: 28)
        return (Data(material.prefix(16)), Data(material.suffix(12)))
    }
}
