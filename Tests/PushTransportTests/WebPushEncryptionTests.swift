import Foundation
import PigeonCrypto
import Testing
import PigeonTestSupport

/// RFC 8291's worked example (§5, with the intermediate values of its appendix A), reproduced
/// byte for byte, then a round trip through the subscriber's side.
@Suite("Web Push message encryption (RFC 8291)", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct WebPushEncryptionTests {
    static func bytes(_ text: String) -> Data { Base64URL.decode(text)! }

    static let plaintext = Data("When I grow up, I want to be a watermelon".utf8)
    static let subscriberPublic = bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
    static let subscriberPrivate = bytes("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")
    static let serverPublic = bytes("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
    static let serverPrivate = bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")
    static let authSecret = bytes("BTBZMqHH6r4Tts7J_aSIgg")
    static let salt = bytes("DGv6ra1nlYgDCS1FRnbzlw")

    @Test("the RFC's keys, salt and plaintext give its shared secret, content key, nonce, header and body")
    func rfcExample() throws {
        let serverKey = try P256PrivateKey(privateScalar: Self.serverPrivate, publicPoint: Self.serverPublic)
        #expect(try serverKey.publicPoint == Self.serverPublic)
        let shared = try serverKey.sharedSecret(with: P256PublicKey(point: Self.subscriberPublic))
        #expect(Base64URL.encode(shared) == "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs")
        let keys = try WebPushEncryption.derive(subscriberPublic: Self.subscriberPublic, serverPublic: Self.serverPublic,
                                            authSecret: Self.authSecret, salt: Self.salt, sharedSecret: shared)
        #expect(Base64URL.encode(keys.contentKey) == "oIhVW04MRdy2XN9CiKLxTg")
        #expect(Base64URL.encode(keys.nonce) == "4h_95klXJ5E_qnoN")
        let body = try WebPushEncryption.encrypt(Self.plaintext, to: .init(publicKey: Self.subscriberPublic, authSecret: Self.authSecret),
                                                 serverKey: serverKey, salt: Self.salt)
        #expect(Base64URL.encode(body.prefix(86))
            == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        #expect(Base64URL.encode(body.dropFirst(86)) == "8pfeW0KbunFT06SuDKoJH9Ql87S1QUrdirN6GcG7sFz1y1sqLgVi1VhjVkHsUoEsbI_0LpXMuGvnzQ")
        #expect(Base64URL.encode(body) == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
    }

    @Test("the subscriber decrypts what a fresh key and salt encrypted; a changed byte is refused; more than 3,993 bytes are refused")
    func roundTrip() throws {
        let subscriber = try P256PrivateKey()
        let auth = try RandomBytes.generate(16)
        let message = Data((String(repeating: "Код 1234. ", count: 400)).utf8.prefix(WebPushEncryption.maximumPlaintext))
        let body = try WebPushEncryption.encrypt(message, to: .init(publicKey: subscriber.publicPoint, authSecret: auth),
                                                 serverKey: P256PrivateKey(), salt: RandomBytes.generate(16))
        #expect(body.count == 4096)
        #expect(try WebPushEncryption.decrypt(body, subscriberKey: subscriber, authSecret: auth) == message)
        var tampered = body
        tampered[tampered.count - 20] ^= 1
        #expect(throws: CryptoError.self) { try WebPushEncryption.decrypt(tampered, subscriberKey: subscriber, authSecret: auth) }
        #expect(throws: CryptoError.self) {
            try WebPushEncryption.encrypt(message + Data("x".utf8), to: .init(publicKey: subscriber.publicPoint, authSecret: auth),
                                          serverKey: P256PrivateKey(), salt: RandomBytes.generate(16))
        }
    }

    @Test("a point off the curve or of the wrong size is refused")
    func badPoints() {
        var offCurve = Self.subscriberPublic
        offCurve[40] ^= 0xFF
        #expect(throws: CryptoError.self) { try P256PublicKey(point: offCurve) }
        #expect(throws: CryptoError.self) { try P256PublicKey(point: Data(Self.subscriberPublic.prefix(33))) }
    }
}
