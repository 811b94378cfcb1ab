import Foundation
import PigeonCrypto
import PigeonDecryptor
import PushCore
import Testing
import PigeonTestSupport

/// The phone's decryptor against pushes sealed by the gateway's encryptor, and against every
/// way a push can be wrong.
@Suite("Confidential decryptor", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct DecryptorTests {
    struct Device {
        let key: P256PrivateKey
        let keyId: String
        var decryptor: ConfidentialDecryptor {
            get throws { try ConfidentialDecryptor(keyId: keyId, privateKey: key.privateScalar, publicKey: key.publicPoint) }
        }
        init(keyId: String = "k1") throws {
            key = try P256PrivateKey()
            self.keyId = keyId
        }
    }

    func seal(_ text: String, id: String = "n-1", to device: Device) throws -> E2EEnvelope {
        let content = SealedContent.json(notificationId: id, text: text, type: "PIN_CODE", target: "123456", details: [("name", "ACME")])
        let sealed = try ConfidentialSealing.seal(content, keyId: device.keyId, devicePublicKey: device.key.publicPoint, additionalData: Data(id.utf8))
        return E2EEnvelope(keyId: device.keyId, ephemeralPublicKey: sealed.ephemeralPublicKey, salt: sealed.salt, ciphertext: sealed.ciphertext)
    }

    /// The payload an app receives from APNs (the envelope as an object) or FCM (as a string).
    func payload(_ envelope: E2EEnvelope, id: String = "n-1", asString: Bool) throws -> [AnyHashable: Any] {
        let e2e: Any = asString ? envelope.text : try JSONSerialization.jsonObject(with: envelope.json.encoded)
        return ["notificationId": id, "e2e": e2e]
    }

    @Test("a sealed push opens from an APNs payload and from an FCM payload")
    func opensBothShapes() throws {
        let device = try Device()
        let envelope = try seal("Code 123456", to: device)
        for asString in [false, true] {
            let content = try device.decryptor.open(payload: payload(envelope, asString: asString))
            #expect(content == ConfidentialContent(notificationId: "n-1", text: "Code 123456", type: "PIN_CODE", target: "123456", details: ["name": "ACME"]))
        }
    }

    @Test("each push has its own ephemeral key and salt")
    func freshPerPush() throws {
        let device = try Device()
        let first = try seal("Code 1", to: device), second = try seal("Code 1", to: device)
        #expect(first.ephemeralPublicKey != second.ephemeralPublicKey)
        #expect(first.salt != second.salt)
        #expect(first.ciphertext != second.ciphertext)
    }

    @Test("a tampered ciphertext, another notification id or another device's key does not open")
    func refusesWhatIsNotItsOwn() throws {
        let device = try Device(), other = try Device()
        let envelope = try seal("Code 9", to: device)
        var tampered = envelope
        tampered.ciphertext[tampered.ciphertext.startIndex + 3] ^= 0x01
        #expect(throws: DecryptionError.authenticationFailed) { try device.decryptor.open(payload: payload(tampered, asString: false)) }
        #expect(throws: DecryptionError.authenticationFailed) { try device.decryptor.open(payload: payload(envelope, id: "n-2", asString: false)) }
        #expect(throws: DecryptionError.authenticationFailed) { try other.decryptor.open(payload: payload(envelope, asString: false)) }
        let rotated = try Device(keyId: "k2")
        #expect(throws: DecryptionError.wrongKey(keyId: "k1")) { try rotated.decryptor.open(payload: payload(envelope, asString: false)) }
    }

    @Test("malformed envelopes are named, not crashed on")
    func malformedEnvelopes() throws {
        let device = try Device()
        let good = try JSONSerialization.jsonObject(with: seal("x", to: device).json.encoded) as! [String: Any]
        func refused(_ change: (inout [String: Any]) -> Void) throws -> DecryptionError? {
            var object = good
            change(&object)
            do {
                _ = try device.decryptor.open(payload: ["notificationId": "n-1", "e2e": object])
                return nil
            } catch { return error as? DecryptionError }
        }
        #expect(try refused { $0["v"] = 2 } == .unsupportedVersion(2))
        #expect(try refused { $0["v"] = "1" } != nil)
        #expect(try refused { $0["epk"] = "AAAA" } != nil)
        #expect(try refused { $0["salt"] = "not base64url!" } != nil)
        #expect(try refused { $0["ct"] = "AAAA" } != nil)
        #expect(try refused { $0.removeValue(forKey: "kid") } != nil)
        // A point of the right size that is not on the curve.
        #expect(try refused { $0["epk"] = PigeonCrypto.Base64URL.encode(Data([4] + [UInt8](repeating: 1, count: 64))) } != nil)
        #expect(throws: DecryptionError.self) { try device.decryptor.open(payload: ["notificationId": "n-1"]) }
        #expect(throws: DecryptionError.self) { try device.decryptor.open(payload: ["notificationId": "n-1", "e2e": "{not json"]) }
    }
}
