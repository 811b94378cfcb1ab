import Foundation

/// The `e2e` member of a confidential push (CONTRACT §8, format `v1`): `{"v": 1, "kid", "epk",
/// "salt", "ct"}`, the binary members in base64url without padding. APNs and Web Push carry it
/// as a JSON object, FCM, Huawei and RuStore as a string holding that object.
package struct ConfidentialEnvelope: Sendable, Equatable {
    /// The device key's id the push was sealed to.
    package var keyId: String
    /// The sender's ephemeral P-256 key, uncompressed (65 bytes).
    package var ephemeralPublicKey: Data
    /// 16 bytes.
    package var salt: Data
    /// The AES-128-GCM ciphertext followed by its 16-byte tag.
    package var ciphertext: Data

    package init(keyId: String, ephemeralPublicKey: Data, salt: Data, ciphertext: Data) {
        self.keyId = keyId
        self.ephemeralPublicKey = ephemeralPublicKey
        self.salt = salt
        self.ciphertext = ciphertext
    }

    /// The envelope of a push's payload (APNs `userInfo`, FCM `data`, a Web Push message's JSON):
    /// its `e2e` member, an object or a string holding one.
    package init(payload: [AnyHashable: Any]) throws(DecryptionError) {
        guard let member = payload["e2e"] else { throw .malformedEnvelope("the payload has no 'e2e' member") }
        try self.init(member: member)
    }

    /// An envelope from its JSON text.
    package init(json: Data) throws(DecryptionError) {
        self = try Self.parse(String(decoding: json, as: UTF8.self))
    }

    init(member: Any) throws(DecryptionError) {
        self = try Self.parse(member)
    }

    /// The envelope's members as they travel; JSONDecoder checks each one's type strictly.
    private struct Wire: Decodable {
        var v: Int
        var kid: String
        var epk: String
        var salt: String
        var ct: String
    }

    private static func parse(_ member: Any) throws(DecryptionError) -> ConfidentialEnvelope {
        let json: Data
        if let text = member as? String {
            json = Data(text.utf8)
        } else if member is [String: Any], let encoded = try? JSONSerialization.data(withJSONObject: member) {
            json = encoded
        } else {
            throw .malformedEnvelope("'e2e' is neither an object nor a string")
        }
        // The version first, so a newer format is named as such rather than as malformed.
        if let version = try? JSONDecoder().decode(Version.self, from: json), version.v != 1 { throw .unsupportedVersion(version.v) }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: json) else {
            throw .malformedEnvelope("expected {\"v\": 1, \"kid\", \"epk\", \"salt\", \"ct\"} with string members")
        }
        guard !wire.kid.isEmpty else { throw .malformedEnvelope("'kid' is empty") }
        let ciphertext = try bytes(wire.ct, "ct", count: nil)
        guard ciphertext.count >= 16 + 256, (ciphertext.count - 16) % 256 == 0 else {
            throw .malformedEnvelope("'ct' is \(ciphertext.count) bytes; expected a multiple of 256 and a 16-byte tag")
        }
        return ConfidentialEnvelope(keyId: wire.kid, ephemeralPublicKey: try bytes(wire.epk, "epk", count: 65),
                                    salt: try bytes(wire.salt, "salt", count: 16), ciphertext: ciphertext)
    }

    private struct Version: Decodable {
        var v: Int
    }

    private static func bytes(_ text: String, _ name: String, count: Int?) throws(DecryptionError) -> Data {
        guard let data = Base64URLText.decode(text) else { throw .malformedEnvelope("'\(name)' is not base64url") }
        if let count, data.count != count { throw .malformedEnvelope("'\(name)' is \(data.count) bytes, expected \(count)") }
        return data
    }
}

/// Base64url without padding, strictly: only its alphabet, no `=`.
enum Base64URLText {
    static func decode(_ text: String) -> Data? {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        guard text.allSatisfy(allowed.contains), text.count % 4 != 1 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
