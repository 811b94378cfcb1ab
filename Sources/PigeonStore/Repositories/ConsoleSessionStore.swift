import Foundation
import PigeonDomain
import PostgresDriver

/// Console sessions in PostgreSQL (`console_sessions`).
package struct PostgresConsoleSessions: Sendable {
    private let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    package func insert(_ session: StoredConsoleSession, capacity: Int, idleBefore: Date, startedBefore: Date) async throws {
        try await pool.transaction { connection in
            _ = try connection.query("""
                DELETE FROM console_sessions
                WHERE last_seen_at < to_timestamp(\(idleBefore.timeIntervalSince1970)::double precision)
                   OR started_at < to_timestamp(\(startedBefore.timeIntervalSince1970)::double precision)
                """)
            _ = try connection.query("""
                INSERT INTO console_sessions (digest, operator, role, csrf_token, started_at, last_seen_at)
                VALUES (\(session.digest)::bytea, \(session.operatorName), \(session.role), \(session.csrfToken),
                        to_timestamp(\(session.startedAt.timeIntervalSince1970)::double precision),
                        to_timestamp(\(session.lastSeenAt.timeIntervalSince1970)::double precision))
                """)
            _ = try connection.query("""
                DELETE FROM console_sessions WHERE digest IN (SELECT digest FROM console_sessions ORDER BY started_at DESC OFFSET \(max(1, capacity))::integer)
                """)
        }
    }

    package func touch(digest: Data, now: Date, idleBefore: Date, startedBefore: Date) async throws -> StoredConsoleSession? {
        try await pool.withConnection { connection in
            let live = try connection.query("""
                UPDATE console_sessions SET last_seen_at = greatest(last_seen_at, to_timestamp(\(now.timeIntervalSince1970)::double precision))
                WHERE digest = \(digest)::bytea AND last_seen_at >= to_timestamp(\(idleBefore.timeIntervalSince1970)::double precision)
                  AND started_at >= to_timestamp(\(startedBefore.timeIntervalSince1970)::double precision)
                RETURNING operator, role, csrf_token, extract(epoch FROM started_at)::double precision AS started_at,
                          extract(epoch FROM last_seen_at)::double precision AS last_seen_at
                """)
                .decodedFirst { row in
                    StoredConsoleSession(digest: digest, operatorName: try row.decode("operator"), role: try row.decode("role"),
                                         csrfToken: try row.decode("csrf_token"), startedAt: try row.decode("started_at"),
                                         lastSeenAt: try row.decode("last_seen_at"))
                }
            if live == nil {
                _ = try connection.query("DELETE FROM console_sessions WHERE digest = \(digest)::bytea")
            }
            return live
        }
    }

    package func delete(digest: Data) async throws {
        try await pool.withConnection { connection in
            _ = try connection.query("DELETE FROM console_sessions WHERE digest = \(digest)::bytea")
        }
    }
}
