import Foundation
import PigeonCrypto
import PigeonDecryptor
import PushCore
import Testing
import PigeonTestSupport

/// The vectors file is our encryptor's output: each vector is sealed again from its recorded
/// inputs and must come out byte for byte, and the decryptor must open it to the expected
/// content. `PIGEON_WRITE_VECTORS=1 swift test --filter ConfidentialVectors` writes a new file.
@Suite("Confidential notification vectors", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConfidentialVectorsTests {
    @Test("every vector is what the encryptor produces from its inputs")
    func vectorsAreReproduced() throws {
        if ProcessInfo.processInfo.environment["PIGEON_WRITE_VECTORS"] == "1" { try VectorGenerator.write() }
        let file = try VectorFile.load()
        #expect(file.vectors.count >= 6)
        for vector in file.vectors {
            let ephemeralPoint = try #require(Base64URL.decode(vector.envelope.epk))
            let ephemeral = try P256PrivateKey(privateScalar: #require(Base64URL.decode(vector.ephemeralPrivateKey)), publicPoint: ephemeralPoint)
            let sealed = try ConfidentialSealing.seal(
                Data(vector.plaintext.utf8), keyId: vector.device.keyId, devicePublicKey: #require(Base64URL.decode(vector.device.publicKey)),
                additionalData: Data(vector.notificationId.utf8), ephemeral: ephemeral, salt: #require(Base64URL.decode(vector.envelope.salt)))
            #expect(Base64URL.encode(sealed.ciphertext) == vector.envelope.ct, "vector \(vector.name)")
            #expect(sealed.ciphertext.count - 16 == vector.paddedLength, "vector \(vector.name)")
        }
    }

    @Test("the decryptor opens every vector to exactly its content")
    func decryptorOpensVectors() throws {
        for vector in try VectorFile.load().vectors {
            let decryptor = try ConfidentialDecryptor(
                keyId: vector.device.keyId, privateKey: #require(Base64URL.decode(vector.device.privateKey)),
                publicKey: #require(Base64URL.decode(vector.device.publicKey)))
            let content = try decryptor.open(vector.envelope.decoded, notificationId: vector.notificationId)
            #expect(content == ConfidentialContent(notificationId: vector.expected.notificationId, text: vector.expected.text,
                                                   type: vector.expected.type, target: vector.expected.target, details: vector.expected.details),
                    "vector \(vector.name)")
        }
    }

    @Test("the vectors cover the padding's edges: no zeros, one block, several blocks")
    func paddingEdges() throws {
        let file = try VectorFile.load()
        let unpadded = file.vectors.map { Data($0.plaintext.utf8).count + 1 }
        #expect(unpadded.contains(256), "a plaintext filling a block with its delimiter exactly")
        #expect(unpadded.contains(257), "a plaintext one byte over a block")
        #expect(file.vectors.contains { $0.paddedLength > 1024 }, "a 1,024-byte text")
    }
}

/// Writes the vectors file from fresh keys, through the gateway's own content builder and sealer.
enum VectorGenerator {
    static func write() throws {
        var vectors: [VectorFile.Vector] = []
        func add(_ name: String, id: String, text: String, type: String = "PIN_CODE", target: String? = nil, details: [(String, String)]? = nil,
                 keyId: String = "device-key-1") throws {
            let device = try P256PrivateKey(), ephemeral = try P256PrivateKey(), salt = try RandomBytes.generate(16)
            let plaintext = SealedContent.json(notificationId: id, text: text, type: type, target: target, details: details)
            let sealed = try ConfidentialSealing.seal(plaintext, keyId: keyId, devicePublicKey: device.publicPoint,
                                                      additionalData: Data(id.utf8), ephemeral: ephemeral, salt: salt)
            vectors.append(VectorFile.Vector(
                name: name,
                device: .init(keyId: keyId, privateKey: Base64URL.encode(try device.privateScalar), publicKey: Base64URL.encode(try device.publicPoint)),
                notificationId: id, ephemeralPrivateKey: Base64URL.encode(try ephemeral.privateScalar),
                plaintext: String(decoding: plaintext, as: UTF8.self), paddedLength: sealed.ciphertext.count - 16,
                envelope: .init(v: 1, kid: keyId, epk: Base64URL.encode(sealed.ephemeralPublicKey), salt: Base64URL.encode(sealed.salt),
                                ct: Base64URL.encode(sealed.ciphertext)),
                expected: .init(notificationId: id, text: text, type: type, target: target,
                                details: details.map { Dictionary($0, uniquingKeysWith: { first, _ in first }) })))
        }
        try add("one-time code", id: "pay-7Q2", text: "Code 482913 confirms a payment of 1,250.00 EUR to ACME", target: "482913")
        try add("no target, no details", id: "n1", text: "Your card was blocked", type: "MESSAGE")
        try add("details and unicode", id: "перевод-42", text: "Код 771204 — перевод 5 000 ₽ Ивану 👋", target: "771204",
                details: [("name", "Иван"), ("currency", "RUB"), ("fxAmount", "500000")], keyId: "k_2026-12")
        // Plaintext lengths around the block: the JSON is `{"notificationId":"<id>","text":"<text>","type":"MESSAGE"}`.
        let frame = SealedContent.json(notificationId: "edge", text: "", type: "MESSAGE", target: nil, details: nil).count
        try add("fills one block with its delimiter", id: "edge", text: String(repeating: "a", count: 255 - frame), type: "MESSAGE")
        try add("one byte over a block", id: "edge", text: String(repeating: "b", count: 256 - frame), type: "MESSAGE")
        try add("a 1,024-byte text", id: "long", text: String(repeating: "1234567890", count: 102) + "ab", type: "MESSAGE")
        try add("escapes in the text", id: "quote\"id", text: "Line one\nline \"two\" \\ tab\t", type: "MESSAGE", keyId: "A")
        let file = VectorFile(
            format: "pigeon-e2e-v1",
            about: "Confidential notifications sealed by the Pigeon gateway (CONTRACT section 8). Binary values are base64url without padding. Open each envelope with device.privateKey and the notificationId as additional data; the plaintext, once the 0x02 delimiter and the zeros after it are removed, is `plaintext`, which parses to `expected`. ephemeralPrivateKey lets an encryptor reproduce `ct` exactly.",
            vectors: vectors)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(file).write(to: VectorFile.url)
    }
}
