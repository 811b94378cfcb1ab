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
    ///
    /// Should OpenSSL fail, the answer is 32 random bytes rather than the untouched (zero) buffer:
    /// every token would otherwise share one digest, and any token would open any device. A random
    /// answer matches nothing, so the call fails closed (the token is refused) without a crash.
    package static func digest(_ token: String) -> Data {
        digest(token) { bytes, output in SHA256(bytes, bytes.count, output) != nil }
    }

    /// The same with `sha256` writing the 32-byte digest into its output and saying whether it
    /// did (OpenSSL's `SHA256`; a failing one in tests).
    static func digest(_ token: String, sha256: ([UInt8], UnsafeMutablePointer<UInt8>) -> Bool) -> Data {
        var digest = [UInt8](repeating: 0, count: 32)
        let bytes = Array(token.utf8)
        let done = digest.withUnsafeMutableBufferPointer { buffer in sha256(bytes, buffer.baseAddress!) }
        guard done else {
            var generator = SystemRandomNumberGenerator()
            return Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        }
        return Data(digest)
    }
}
