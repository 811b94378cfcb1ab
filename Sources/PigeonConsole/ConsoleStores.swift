import Foundation
import PigeonDomain

// The console's own seams: PostgreSQL's tables in the gateway (conformances where it is
// composed), memory in the unit tier.

/// Where console sessions live: PostgreSQL in the gateway (shared by a fleet, kept across
/// restarts), memory in the unit tier.
package protocol ConsoleSessionStore: Sendable {
    /// Stores a new session, first removing the ended ones (idle since before `idleBefore` or
    /// started before `startedBefore`) and then, past `capacity`, the oldest.
    func insert(_ session: StoredConsoleSession, capacity: Int, idleBefore: Date, startedBefore: Date) async throws
    /// The live session of `digest` with its last use moved to `now`; nil when unknown or ended
    /// (idle since before `idleBefore`, or started before `startedBefore`).
    func touch(digest: Data, now: Date, idleBefore: Date, startedBefore: Date) async throws -> StoredConsoleSession?
    /// Ends a session (signing out).
    func delete(digest: Data) async throws
}

/// Where the audit trail is kept: PostgreSQL in the gateway, memory in the unit tier.
package protocol AuditTrail: Sendable {
    /// Appends `entry` (its `at` is the store's clock).
    func record(_ entry: AuditEntry) async throws
    /// Entries recorded at or after `since` (all when nil), newest first, `limit` from `offset`.
    func entries(since: Date?, offset: Int, limit: Int) async throws -> [AuditEntry]
}
