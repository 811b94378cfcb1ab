internal import COpenSSL
import Foundation

/// Bearer tokens for the device API: 256 random bits from the kernel's generator, shown to the
/// app once and stored only as their SHA-256 digest.
package enum SecretToken {
    /// A new token: 32 random bytes, base64url without padding (43 characters).
    package static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Base64URL.encode(Data(bytes))
    }

    /// The SHA-256 digest under which a token is stored and looked up.
    package static func digest(_ token: String) -> Data {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        let bytes = Array(token.utf8)
        _ = SHA256(bytes, bytes.count, &digest)
        return Data(digest)
    }
}
