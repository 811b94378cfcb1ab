import Foundation
import PigeonCrypto
import Synchronization

/// VAPID (RFC 8292): the application server's ES256 JWT per push service origin — `aud` the
/// origin, `exp` twelve hours on (RFC 8292 allows at most 24), `sub` the operator's contact —
/// reused until an hour before it expires, and the `Authorization: vapid t=…, k=…` header.
package final class VAPIDSigner: Sendable {
    package static let lifetime: TimeInterval = 12 * 3600
    package static let renewBefore: TimeInterval = 3600

    private let key: PrivateKey
    private let publicKey: String
    private let subject: String
    private let clock: @Sendable () -> Date
    private let tokens = Mutex<[String: (token: String, expiresAt: Date)]>([:])

    /// `key`: a P-256 private key; `subject`: `mailto:` or `https:` contact.
    package init(key: PrivateKey, subject: String, clock: @escaping @Sendable () -> Date = Date.init) throws(CryptoError) {
        self.key = key
        self.publicKey = Base64URL.encode(try key.p256PublicPoint())
        self.subject = subject
        self.clock = clock
    }

    /// The application server's public key, base64url (what browsers subscribe with).
    package var applicationServerKey: String { publicKey }

    /// The `Authorization` header value for a push to `origin`.
    package func authorization(origin: String) throws(CryptoError) -> String {
        let now = clock()
        if let cached = tokens.withLock({ $0[origin] }), cached.expiresAt.timeIntervalSince(now) > Self.renewBefore {
            return "vapid t=\(cached.token), k=\(publicKey)"
        }
        let expiresAt = now.addingTimeInterval(Self.lifetime)
        let token = try JSONWebToken.sign(header: ["typ": "JWT"], claims: ["aud": origin, "exp": Int(expiresAt.timeIntervalSince1970), "sub": subject],
                                          key: key, algorithm: .es256)
        tokens.withLock { tokens in
            // Bounded: a gateway talks to a handful of push services; a flood of origins is refused at registration.
            if tokens.count > 1000 { tokens.removeAll() }
            tokens[origin] = (token, expiresAt)
        }
        return "vapid t=\(token), k=\(publicKey)"
    }
}
