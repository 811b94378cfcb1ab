import Foundation
import PigeonDomain
import PostgresDriver

/// The history's days. Notifications and deliveries are partitioned by day (UTC) of the send;
/// a pass creates the partitions of the coming days and drops every day that ended more than
/// the retention period ago — a catalog change per day, whatever the day held. A notification
/// is therefore kept at least the retention period and gone within a day after it.
///
/// A day is detached concurrently (sends, claims and acknowledgements go on meanwhile) and then
/// dropped; a pass interrupted in between is finished by the next one.
package struct Retention: Sendable {
    /// Session advisory lock: one process at a time runs a pass.
    static let lock = "7414013205"

    private let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Creates the partitions from the day before `now` to `daysAhead` days after it. A sender
    /// holding the tables longer than `lockTimeout` makes the pass fail (retried later) rather
    /// than queue every send behind it.
    package func prepareDays(around now: Date, daysAhead: Int = 3, lockTimeout: Duration = .seconds(1)) async throws -> Int {
        let moment = NotificationStore.timestamp(now)
        return try await pool.transaction { connection in
            try connection.setTransactionLockTimeout(lockTimeout)
            let ahead = max(0, daysAhead)
            return try connection.query("""
                SELECT pigeon_create_days(pigeon_day(\(moment)::timestamptz) - 1, pigeon_day(\(moment)::timestamptz) + \(ahead)::integer)
                """).scalar(as: Int.self, "the count of day partitions made")
        }
    }

    /// Drops every day that ended `days` days or more before `now`; returns the tables dropped.
    package func dropDays(olderThan days: Int, now: Date) async throws -> RetentionStep {
        let cutoff = NotificationStore.timestamp(now.addingTimeInterval(-Double(max(1, days)) * 86_400))
        return try await pool.withConnection { connection in
            guard try connection.query("SELECT pg_try_advisory_lock(\(Self.lock)::bigint) AS locked")
                .decodedFirst({ try $0.decode("locked", as: Bool.self) }) == true else {
                return RetentionStep(created: 0, dropped: [], ran: false)
            }
            defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(Self.lock)::bigint)") }
            // Deliveries and device pushes before notifications; a table already detached by an interrupted pass
            // (no longer a partition, or detach pending) is finished here.
            let aged = try connection.query("""
                SELECT c.relname AS table_name, parent.relname AS parent_name, COALESCE(i.inhdetachpending, false) AS detach_pending
                FROM pg_class c
                LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
                LEFT JOIN pg_class parent ON parent.oid = i.inhparent
                WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace
                  AND c.relname ~ '^(deliveries|device_pushes|notifications)_p[0-9]{8}$'
                  AND to_date(right(c.relname, 8), 'YYYYMMDD') + 1 <= (\(cutoff)::timestamptz AT TIME ZONE 'UTC')::date
                ORDER BY c.relname LIKE 'notifications%', c.relname
                """).decoded { row in
                (table: try row.decode("table_name", as: String.self), parent: try row.decodeIfPresent("parent_name", as: String.self),
                 detachPending: try row.decode("detach_pending", as: Bool.self))
            }
            var dropped: [String] = []
            for (table, parent, detachPending) in aged {
                if let parent {
                    let finish = detachPending ? "FINALIZE" : "CONCURRENTLY"
                    try connection.query(sql: "ALTER TABLE \"\(parent)\" DETACH PARTITION \"\(table)\" \(finish)")
                }
                try connection.query(sql: "DROP TABLE IF EXISTS \"\(table)\"")
                dropped.append(table)
            }
            // Removed devices are kept as long as the deliveries that went to them.
            _ = try connection.query("""
                DELETE FROM removed_devices WHERE id IN (
                    SELECT id FROM removed_devices WHERE removed_at < \(cutoff)::timestamptz ORDER BY removed_at LIMIT 100000)
                """)
            // Live Activities (CONTRACT §9) not changed for as long, and pushes that waited as
            // long in vain (an update whose phone never sent its token).
            _ = try connection.query("DELETE FROM activity_pushes WHERE created_at < \(cutoff)::timestamptz")
            _ = try connection.query("DELETE FROM activities WHERE updated_at < \(cutoff)::timestamptz")
            return RetentionStep(created: 0, dropped: dropped, ran: true)
        }
    }

    /// The days (as `YYYYMMDD`) that have partitions, oldest first.
    package func days() async throws -> [String] {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query(sql: """
                SELECT right(c.relname, 8) AS day FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'notifications'::regclass ORDER BY 1
                """).decoded { try $0.decode("day", as: String.self) }
        }
    }
}
