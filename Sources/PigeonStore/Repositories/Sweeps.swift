import Foundation
import PigeonDomain
import PostgresDriver

/// The periodic sweeps, each step one bounded transaction under a transaction-scoped advisory
/// lock (several gateways: one sweeps, the others skip the step):
/// - expiry: deliveries whose notification's `timeout` passed and that can still expire become
///   EXPIRED (pending retries stop: the engine only records onto QUEUED rows), and one
///   `reportNotificationExpired` per notification lists their users; a SENDING_FAILED delivery
///   the bank was already told of (``ReachedNobody``) is passed over, so it is told once;
/// - hygiene: subscriptions with no successful delivery for longer than the configured period,
///   and registrations left waiting for their SMS code, are deleted.
package struct Sweeps: Sendable {
    /// Advisory lock keys (any constants unique to Pigeon).
    static let expiryLock = "7414013201"
    static let hygieneLock = "7414013202"

    private let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Expires deliveries of up to `notifications` overdue notifications, at most `rows`
    /// deliveries per transaction. A notification whose deliveries fit in one step gets exactly
    /// one report; a larger one gets one report per step of `rows` users. The oldest deadlines
    /// first.
    package func expire(notifications: Int = 100, rows: Int = 10_000) async throws -> SweepStep {
        try await expire(notifications: notifications, rows: rows, newestFirst: false)
    }

    /// ``expire(notifications:rows:)`` taking the deadlines that passed last first: the deadline
    /// watcher's step, run as deadlines pass, so a code's expiry is not queued behind a backlog's.
    package func expireNewestFirst(notifications: Int = 100, rows: Int = 10_000) async throws -> SweepStep {
        try await expire(notifications: notifications, rows: rows, newestFirst: true)
    }

    private func expire(notifications: Int, rows: Int, newestFirst: Bool) async throws -> SweepStep {
        let expirable = PostgresArray.encode(DeliveryState.allCases.filter { $0.canAdvance(to: .expired) }.map(\.rawValue))
        // Limits are written into the statements: generic plans that do not know them sort
        // every candidate row.
        let notifications = max(1, min(notifications, 10_000))
        return try await pool.transaction { connection in
            guard try Self.tryLock(Self.expiryLock, connection) else {
                return SweepStep(rows: 0, reports: 0, ran: false, more: false)
            }
            // Every statement of the step probes an index, whatever a blast did to the day's
            // statistics: on a day a blast fills, a generic plan expected hundreds of deliveries
            // per notification and read the whole partition for each one (seen in the erasure:
            // 997,731 rows 20 times, 4.5 s a step, during a blast of a million).
            try Self.forbidSequentialScans(connection)
            let overdue = try connection.query(sql: """
                SELECT key, id FROM notifications WHERE NOT expiry_handled AND expires_at <= now()
                ORDER BY expires_at \(newestFirst ? "DESC" : "ASC") LIMIT \(notifications)
                """).decoded { row in (key: String(try row.decode("key", as: Int64.self)), id: try row.decode("id", as: String.self)) }
            var budget = rows
            var changed = 0, reports = 0, more = overdue.count == notifications
            for (key, id) in overdue {
                guard budget > 0 else { more = true; break }
                let allowance = budget
                var expired: [(user: String, position: Int)] = []
                var left = true
                for _ in 0..<Self.expiryPasses {
                    expired += try Self.expireDeliveries(of: key, limit: allowance - expired.count, expirable: expirable, connection)
                    // The budget spent: the rest is the next step's, without looking.
                    if expired.count >= allowance { break }
                    // A delivery another transaction changed (the engine writing its outcome)
                    // while this one waited for its lock is locked in its new version but missed
                    // by the update, whose tuple ids are the old ones: a notification was marked
                    // handled with such a delivery still SENT and no report. A fresh statement
                    // sees the new version, so look again before calling the notification done.
                    left = try connection.query(
                        "SELECT EXISTS (SELECT 1 FROM deliveries WHERE notification_key = \(key) AND state = ANY(\(expirable)::text[]) AND reported_early_at IS NULL) AS left").decodedFirst { try $0.decode("left", as: Bool.self) } ?? true
                    if !left { break }
                }
                let users = expired.sorted { $0.position < $1.position }.map(\.user)
                if !users.isEmpty {
                    try Outbox.enqueue(.notificationExpired(notificationId: id, users: users), connection)
                    reports += 1
                }
                changed += users.count
                budget -= users.count
                if !left {
                    _ = try connection.query("UPDATE notifications SET expiry_handled = true WHERE key = \(key)")
                } else {
                    more = true
                }
            }
            let erased = try Self.eraseFinishedContent(connection)
            return SweepStep(rows: changed, reports: reports, ran: true, more: more || erased.more,
                             erasedFinal: erased.final, erasedExpired: erased.expired)
        }
    }

    /// Statements a step spends on one notification whose deliveries keep changing under it
    /// before leaving it to the next step.
    static let expiryPasses = 3

    /// Expires up to `limit` deliveries of notification `key` still in an `expirable` state;
    /// answers their users and positions. Updated by tuple ids within the notification's
    /// partition: a join back on the key made the planner hash the whole table (1 s per step at
    /// a million rows; 90 ms this way).
    static func expireDeliveries(of key: String, limit: Int, expirable: String?, _ connection: PostgresConnection) throws
        -> [(user: String, position: Int)] {
        guard limit > 0 else { return [] }
        return try connection.query(sql: """
            UPDATE deliveries d SET state = 'EXPIRED', updated_at = now(), next_attempt_at = NULL
            WHERE notification_key = $1 AND ctid = ANY(ARRAY(
                SELECT ctid FROM deliveries
                WHERE notification_key = $1 AND state = ANY($2::text[]) AND reported_early_at IS NULL
                ORDER BY position LIMIT \(limit) FOR UPDATE))
            RETURNING d.user_id, d.position
            """, [key, expirable]).decoded { row in (user: try row.decode("user_id", as: String.self), position: try row.decode("position", as: Int.self)) }
    }

    /// The most confidential notifications one step erases.
    static let erasuresPerStep = 1_000

    /// The erasure step: `$1` the final states (a text array).
    static let eraseStatement = """
        UPDATE notifications n SET push_text = '', push_detail_keys = '{}', push_detail_values = '{}',
            detail_keys = NULL, detail_values = NULL, content_erased_at = now()
        WHERE n.key IN (
            SELECT c.key FROM notifications c
            WHERE c.confidential AND c.content_erased_at IS NULL
              -- A probe per notification into its deliveries by primary key (see
              -- eraseFinishedContent for why the transaction forbids sequential scans).
              AND (c.expiry_handled OR (
                  SELECT true FROM deliveries d WHERE d.notification_key = c.key AND NOT d.state = ANY($1::text[]) LIMIT 1) IS NULL)
            LIMIT \(erasuresPerStep) FOR UPDATE SKIP LOCKED)
          AND n.content_erased_at IS NULL
        RETURNING n.expiry_handled
        """

    /// Erases the content of confidential notifications that are over (CONTRACT §8): their
    /// expiry handled (the timeout passed; set earlier in the same transaction), or every
    /// recipient's delivery final. One statement: a crash leaves the content or nothing. Runs in
    /// the expiry step's transaction, which forbids sequential scans (its probe of each
    /// notification's deliveries then takes the primary key, whatever the statistics).
    static func eraseFinishedContent(_ connection: PostgresConnection) throws -> (final: Int, expired: Int, more: Bool) {
        let final = PostgresArray.encode(DeliveryState.allCases.filter(\.erasesConfidentialContent).map(\.rawValue))
        let handled = try connection.query(sql: eraseStatement, [final]).decoded { try $0.decode("expiry_handled", as: Bool.self) }
        let expired = handled.filter { $0 }.count
        return (handled.count - expired, expired, handled.count == erasuresPerStep)
    }

    /// Takes the transaction-scoped advisory lock `key` if no one holds it; false when another
    /// transaction does.
    static func tryLock(_ key: String, _ connection: PostgresConnection) throws -> Bool {
        try connection.query("SELECT pg_try_advisory_xact_lock(\(key)::bigint) AS locked").decodedFirst { try $0.decode("locked", as: Bool.self) } ?? false
    }

    /// No sequential scans for the rest of the transaction (plans made in it keep to indexes).
    static func forbidSequentialScans(_ connection: PostgresConnection) throws {
        _ = try connection.query(sql: "SELECT set_config('enable_seqscan', 'off', true)")
    }

    /// The earliest deadline of a notification whose expiry is not handled yet (passed or to
    /// come), or `nil` when there is none: one descent of the expiry index per day kept.
    package func nextDeadline() async throws -> Date? {
        try await pool.withConnection { connection in
            try connection.query(sql: """
                SELECT extract(epoch FROM expires_at)::double precision AS expires_at FROM notifications
                WHERE NOT expiry_handled ORDER BY expires_at LIMIT 1
                """).decodedFirst { try $0.decode("expires_at", as: Date.self) }
        }
    }

    /// The longest period hygiene reckons with: a century (no device was reached before).
    static let longestStalePeriod: Duration = .seconds(100 * 366 * 86_400)

    /// Deletes up to `limit` subscriptions with no successful delivery (or, never reached, no
    /// registration) within `period`, up to `limit` registrations waiting for a code longer than a
    /// day, up to `limit` rate-limit windows that ended, and up to `limit` Wallet log messages
    /// older than a week. Stale subscriptions are found through the week of their last reach
    /// (`device_reach_by_week`), the oldest weeks first (in no order within a week), then filtered by the time itself.
    package func removeStaleDevices(olderThan period: Duration, limit: Int = 1_000) async throws -> SweepStep {
        // A period past a century (`deviceExpiredPeriodMillis` set huge to keep every device)
        // reaches no device, and `now()` minus thousands of years is out of PostgreSQL's range.
        let seconds = String(Double(min(period, Self.longestStalePeriod).components.seconds))
        let limit = max(1, min(limit, 100_000))
        return try await pool.transaction { connection in
            guard try Self.tryLock(Self.hygieneLock, connection) else {
                return SweepStep(rows: 0, reports: 0, ran: false, more: false)
            }
            let deleted = try connection.query(sql: """
                WITH gone AS (
                DELETE FROM devices WHERE id IN (
                    SELECT d.id FROM device_reach r JOIN devices d ON d.id = r.device_id
                    WHERE d.state = 'SUBSCRIBED' AND r.reached_at < now() - make_interval(secs => $1::double precision)
                      AND r.reached_week <= pigeon_day(now() - make_interval(secs => $1::double precision)) / 7
                    ORDER BY r.reached_week
                    LIMIT \(limit) FOR UPDATE OF d SKIP LOCKED)
                RETURNING *
                ), \(RemovedDevices.noted(reason: "$2"))
                SELECT count(*) FROM gone
                """, [seconds, RemovedDevices.stale]).scalar(as: Int.self, "the count of stale devices removed")
            let abandoned = try connection.query(sql: """
                DELETE FROM pending_registrations WHERE id IN (
                    SELECT id FROM pending_registrations WHERE created_at < now() - interval '1 day'
                    ORDER BY created_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                """).affected
            let windows = try connection.query(sql: """
                DELETE FROM rate_limits WHERE bucket IN (
                    SELECT bucket FROM rate_limits WHERE window_ends_at < now()
                    ORDER BY window_ends_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                """).affected
            let walletLogs = try connection.query(sql: """
                DELETE FROM pass_logs WHERE id IN (
                    SELECT id FROM pass_logs WHERE received_at < now() - interval '7 days'
                    ORDER BY received_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                """).affected
            return SweepStep(rows: deleted + abandoned, reports: 0, ran: true,
                             more: deleted == limit || abandoned == limit || windows == limit || walletLogs == limit)
        }
    }
}
