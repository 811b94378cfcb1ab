import Foundation
import PigeonDomain

/// What the PassKit web service asks of the database (in PostgreSQL, `PassStore`): the seam its tests meet
/// with an in-memory fake. Every call is checked against the pass's authentication token.
package protocol WalletRegistering: Sendable {
    /// Registers a Wallet (`device`, with its push token) for a pass.
    func register(device: String, pushToken: String, for pass: PassIdentity, authenticationDigest: Data,
                  limits: PassRegistrationLimits) async throws -> PassRegistrationResult
    /// False when the pass is unknown or the token wrong; a Wallet not registered (any more) is
    /// true: the DELETE is idempotent, as Apple's web service expects.
    func unregister(device: String, from pass: PassIdentity, authenticationDigest: Data) async throws -> Bool
    /// The device's passes of a type changed since `tag`, or nil when none did.
    func serialsUpdated(device: String, passType: String, since tag: Int64?) async throws -> (serials: [String], lastUpdated: Int64)?
    /// The pass's newest content, unless unchanged since `ifModifiedSince`.
    func fetch(_ pass: PassIdentity, authenticationDigest: Data, ifModifiedSince: Date?) async throws -> PassFetchResult
}
