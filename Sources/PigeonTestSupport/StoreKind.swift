/// Which implementation a contract suite runs its cases on: the in-memory fake (every tier) or
/// PostgreSQL (where the tier has a database). One set of cases on both holds the fakes the unit
/// tier runs on to the SQL the gateway runs.
package enum StoreKind: String, Sendable, CustomStringConvertible {
    case memory, postgresql

    package var description: String { rawValue }

    /// PostgreSQL only where the tier has a database.
    package static var available: [StoreKind] { TestDatabase.isAvailable ? [.memory, .postgresql] : [.memory] }
}
