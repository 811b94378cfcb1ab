import Foundation
import PigeonCrypto
import PigeonDecryptor
import PushCore

/// `vectors/confidential-v1.json`: pushes sealed by the gateway's encryptor, with every input
/// needed to reproduce them (device key, ephemeral key, salt) and the content each opens to —
/// what a mobile team checks its own decryptor against.
struct VectorFile: Codable {
    struct Key: Codable {
        var keyId: String
        /// base64url of the 32-byte scalar.
        var privateKey: String
        /// base64url of the 65-byte uncompressed point.
        var publicKey: String
    }

    struct Envelope: Codable, Equatable {
        var v: Int
        var kid: String
        var epk: String
        var salt: String
        var ct: String
    }

    struct Expected: Codable, Equatable {
        var notificationId: String
        var text: String
        var type: String
        var target: String?
        var details: [String: String]?
    }

    struct Vector: Codable {
        var name: String
        var device: Key
        var notificationId: String
        /// The sender's side, for reproducing the envelope: the ephemeral key's scalar and the salt.
        var ephemeralPrivateKey: String
        /// The JSON plaintext before padding.
        var plaintext: String
        /// Its length once padded (0x02, then zeros to a multiple of 256).
        var paddedLength: Int
        var envelope: Envelope
        var expected: Expected
    }

    var format: String
    var about: String
    var vectors: [Vector]

    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("vectors/confidential-v1.json")

    static func load() throws -> VectorFile {
        try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url))
    }
}

extension VectorFile.Envelope {
    var decoded: ConfidentialEnvelope {
        get throws { try ConfidentialEnvelope(json: JSONEncoder().encode(self)) }
    }
}
