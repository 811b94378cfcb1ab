import Foundation
@testable import PigeonCrypto
import Testing
import PigeonTestSupport

/// OpenSSL calls that fail must not yield a fixed value (issue 45: the untouched output buffer
/// was all zeros, so every key derived from it, or every token's digest, would be the same).
@Suite("Crypto failures", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct CryptoFailureTests {
    @Test("a failing HMAC throws instead of answering 32 zero bytes; a working one answers RFC 4231's vector")
    func hmacFailureThrows() throws {
        #expect(throws: CryptoError.self) {
            try HMACSHA256.authenticate(key: Data([1]), data: Data([2])) { _, _, _ in false }
        }
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let tag = try HMACSHA256.authenticate(key: Data("Jefe".utf8), data: Data("what do ya want for nothing?".utf8))
        #expect(tag.map { String(format: "%02x", $0) }.joined() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test("HKDF refuses a length it cannot give instead of trapping")
    func hkdfLength() {
        #expect(throws: CryptoError.self) { try HKDFSHA256.derive(salt: Data(), inputKeyMaterial: Data([1]), info: Data(), length: 0) }
        #expect(throws: CryptoError.self) { try HKDFSHA256.derive(salt: Data(), inputKeyMaterial: Data([1]), info: Data(), length: 255 * 32 + 1) }
    }

    @Test("a failing SHA-256 makes a token's digest random (it matches nothing), never the zero digest every token would share")
    func digestFailsClosed() {
        let first = SecretToken.digest("token") { _, _ in false }
        let second = SecretToken.digest("token") { _, _ in false }
        #expect(first.count == 32 && first != second && first != Data(count: 32))
        #expect(SecretToken.digest("token") == SecretToken.digest("token"))
        #expect(SecretToken.digest("token").map { String(format: "%02x", $0) }.joined()
                == "3c469e9d6c5875d37a43f353d4f88e61fcf812c66eee3457465a40b0da4153e0")
    }
}
