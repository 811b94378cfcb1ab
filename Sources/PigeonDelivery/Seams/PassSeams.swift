import Foundation
import PigeonDomain
import PushCore

/// Registered devices' update pushes and fetch waits, as the pass engine uses them. PostgreSQL's
/// `PassStore` in the gateway; an in-memory queue in tests.
package protocol PassUpdateQueueing: Sendable {
    /// Up to `limit` due claims (pushes due, fetch waits ended), leased to `owner` for `lease`.
    func claimPassPushes(owner: String, limit: Int, lease: Duration) async throws -> [ClaimedPassPush]
    /// Writes results of claims `owner` still holds, and the bank's report for a version whose
    /// every device has settled with some not fetched; returns how many rows changed.
    @discardableResult
    func recordPassPushes(_ results: [PassPushResult], owner: String) async throws -> Int
    /// Hands back every claim `owner` holds, due at once; returns how many.
    @discardableResult
    func releasePassPushes(owner: String) async throws -> Int
}

/// APNs for pass update pushes: `{}` to each token on the pass type's topic, with its
/// credentials. Never throws: every failure is an outcome.
package protocol PassPushing: Sendable {
    /// One outcome per token, in order.
    func pushUpdates(passTypeIdentifier: String, tokens: [String]) async -> [PushOutcome]
}
