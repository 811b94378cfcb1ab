import Foundation

/// One entry of the console's audit trail (CONTRACT §10): who did what, from where, to what, why,
/// and how it ended. Never what was revealed.
package struct AuditEntry: Sendable, Equatable {
    /// What was done; the `rawValue` is the contract's spelling.
    package enum Action: String, Sendable, CaseIterable {
        case signIn = "sign-in"
        case signInFailed = "sign-in-failed"
        case reveal
        case revoke
        case requeue
        case testPush = "test-push"
        case outboxRetry = "outbox-retry"
    }

    /// The longest operator name, target, reason and outcome kept; longer ones are cut.
    package static let fieldLimit = 256

    /// When it was recorded (the database's clock; ignored when recording).
    package var at: Date
    package var operatorName: String
    /// `viewer`, `support`, `admin`, or empty for a sign-in that failed.
    package var role: String
    package var address: String
    package var action: Action
    package var target: String
    package var reason: String
    package var outcome: String

    package init(at: Date = Date(), operatorName: String, role: String, address: String, action: Action, target: String = "",
                 reason: String = "", outcome: String) {
        self.at = at
        self.operatorName = Self.bounded(operatorName)
        self.role = Self.bounded(role)
        self.address = Self.bounded(address)
        self.action = action
        self.target = Self.bounded(target)
        self.reason = Self.bounded(reason)
        self.outcome = Self.bounded(outcome)
    }

    private static func bounded(_ text: String) -> String {
        guard text.utf8.count > fieldLimit else { return text }
        var cut = Substring(text)
        while cut.utf8.count > fieldLimit { cut = cut.dropLast() }
        return String(cut)
    }
}

/// Where the audit trail is kept: PostgreSQL in the gateway, memory in the unit tier.
package protocol AuditTrail: Sendable {
    /// Appends `entry` (its `at` is the store's clock).
    func record(_ entry: AuditEntry) async throws
    /// Entries recorded at or after `since` (all when nil), newest first, `limit` from `offset`.
    func entries(since: Date?, offset: Int, limit: Int) async throws -> [AuditEntry]
}

/// The audit trail in PostgreSQL (`console_audit`: append-only, see migration 0016).
package struct PostgresAuditTrail: AuditTrail {
    private let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    package func record(_ entry: AuditEntry) async throws {
        try await pool.withConnection { connection in
            _ = try connection.query("""
                INSERT INTO console_audit (operator, role, address, action, target, reason, outcome) VALUES ($1, $2, $3, $4, $5, $6, $7)
                """, [entry.operatorName, entry.role, entry.address, entry.action.rawValue, entry.target, entry.reason, entry.outcome])
        }
    }

    package func entries(since: Date?, offset: Int, limit: Int) async throws -> [AuditEntry] {
        let limit = max(1, min(limit, 500)), offset = max(0, offset)
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT extract(epoch FROM at)::double precision AS at, operator, role, address, action, target, reason, outcome FROM console_audit
                WHERE $1::double precision IS NULL OR at >= to_timestamp($1::double precision)
                ORDER BY at DESC, id DESC LIMIT \(limit) OFFSET \(offset)
                """, [since.map { String($0.timeIntervalSince1970) }]).decoded { row in
                guard let action = AuditEntry.Action(rawValue: try row.decode("action")) else {
                    throw PostgresError(.unexpectedResult, "an audit entry with an unknown action")
                }
                return AuditEntry(at: try row.decode("at"), operatorName: try row.decode("operator"), role: try row.decode("role"),
                                  address: try row.decode("address"), action: action, target: try row.decode("target"),
                                  reason: try row.decode("reason"), outcome: try row.decode("outcome"))
            }
        }
    }

    /// Deletes the entries older than `days` (at least 365: the table refuses younger ones);
    /// returns how many.
    package func expire(olderThanDays days: Int) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query("DELETE FROM console_audit WHERE at < now() - make_interval(days => $1::integer)", [String(max(365, days))]).affected
        }
    }
}
