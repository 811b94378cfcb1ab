import Foundation
import PigeonDomain
import PostgresDriver

/// The audit trail in PostgreSQL (`console_audit`: append-only, see migration 0016).
package struct PostgresAuditTrail: Sendable {
    private let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    package func record(_ entry: AuditEntry) async throws {
        try await pool.withConnection { connection in
            _ = try connection.query("""
                INSERT INTO console_audit (operator, role, address, action, target, reason, outcome)
                VALUES (\(entry.operatorName), \(entry.role), \(entry.address), \(entry.action.rawValue), \(entry.target), \(entry.reason), \(entry.outcome))
                """)
        }
    }

    package func entries(since: Date?, offset: Int, limit: Int) async throws -> [AuditEntry] {
        let limit = max(1, min(limit, 500)), offset = max(0, offset)
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT extract(epoch FROM at)::double precision AS at, operator, role, address, action, target, reason, outcome FROM console_audit
                WHERE \(since?.timeIntervalSince1970)::double precision IS NULL OR at >= to_timestamp(\(since?.timeIntervalSince1970)::double precision)
                ORDER BY at DESC, id DESC LIMIT \(literal: limit) OFFSET \(literal: offset)
                """).decoded { row in
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
            try connection.query("DELETE FROM console_audit WHERE at < now() - make_interval(days => \(max(365, days))::integer)").affected
        }
    }
}
