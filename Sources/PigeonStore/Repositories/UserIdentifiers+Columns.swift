import PigeonDomain
import PostgresDriver

extension UserIdentifiers {
    /// The column of `devices` and `deliveries` that user ids are compared on under this rule:
    /// `user_folded` (lower-cased in Swift when written) or `user_id` as given. Pair it with
    /// ``comparable(_:)`` for the value.
    var userColumn: String { userColumnSQL.text }

    /// ``userColumn`` for a ``PostgresQuery``: one of the two column names, never data.
    var userColumnSQL: StaticOrCodeSQL { caseInsensitive ? "user_folded" : "user_id" }
}
