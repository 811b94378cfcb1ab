internal import CCrypt
internal import COpenSSL
import Foundation

/// Password hashes as `htpasswd -B`, `mkpasswd` and `pigeon hash-password` write them, checked by
/// the system's crypt library (libxcrypt): bcrypt (`$2b$`, `$2y$`, `$2a$`), yescrypt (`$y$`) and
/// SHA-512 crypt (`$6$`). Never our own hash code; the comparison of the result is constant-time.
package enum PasswordHash {
    /// The hash methods an operator's line may use.
    package static let acceptedPrefixes = ["$2b$", "$2y$", "$2a$", "$y$", "$6$"]

    /// Whether `hash` names one of the accepted methods (a DES or MD5 hash, or anything else, is
    /// refused when the file is read, not silently never matched).
    package static func isAccepted(_ hash: String) -> Bool {
        hash.utf8.count <= 512 && acceptedPrefixes.contains { hash.hasPrefix($0) }
    }

    /// Whether `password` hashes to `hash`. False for an unaccepted or malformed hash, a password
    /// longer than 1,024 bytes, or one holding a NUL.
    package static func verify(_ password: String, hash: String) -> Bool {
        guard isAccepted(hash), password.utf8.count <= 1_024, !password.utf8.contains(0) else { return false }
        guard let computed = crypt(password, setting: hash) else { return false }
        // OpenSSL's constant-time comparison; the lengths are the method's, not the password's.
        let (a, b) = (Array(computed.utf8), Array(hash.utf8))
        return a.count == b.count && CRYPTO_memcmp(a, b, a.count) == 0
    }

    /// Spends about as long as ``verify(_:hash:)`` against `like`, for a user name that has no
    /// account, so a wrong name and a wrong password take the same time.
    package static func burn(_ password: String, like hash: String) {
        _ = verify(password, hash: hash)
    }

    /// A new yescrypt hash of `password` (libxcrypt's default cost), salted from the kernel's
    /// generator; nil when the library refuses.
    package static func make(_ password: String) -> String? {
        guard password.utf8.count <= 1_024, !password.utf8.contains(0) else { return nil }
        var setting = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
        guard crypt_gensalt_rn("$y$", 0, nil, 0, &setting, Int32(setting.count)) != nil else { return nil }
        return crypt(password, setting: String(cString: setting))
    }

    /// `crypt_rn` with its scratch space on the heap (it is ~32 KB); nil on failure (libxcrypt
    /// answers a string starting with `*` for an invalid setting).
    private static func crypt(_ password: String, setting: String) -> String? {
        let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
        defer {
            memset(data, 0, MemoryLayout<crypt_data>.size)
            data.deallocate()
        }
        memset(data, 0, MemoryLayout<crypt_data>.size)
        guard let result = crypt_rn(password, setting, data, Int32(MemoryLayout<crypt_data>.size)) else { return nil }
        let text = String(cString: result)
        return text.hasPrefix("*") ? nil : text
    }
}
