import Foundation
import PostgresDriver
import Synchronization

/// The first day whose deliveries can still be claimed, so that a claim reads the queue index of
/// a day or two instead of every day kept for `retentionDays`.
///
/// A day before it holds no QUEUED delivery that has not expired, and none can appear: sends
/// are keyed by the day they are stored, states never move back to QUEUED. The bound is
/// therefore safe however old it is; it is looked up again once a minute so that it moves
/// forward as days drain, and it never passes yesterday, so a send whose transaction began
/// before midnight and committed after is still found at once.
final class LiveDays: Sendable {
    /// How long a looked-up bound is used before it is looked up again.
    static let refreshInterval: Duration = .seconds(60)

    private struct Bound {
        var firstKey: Int64
        var lookedUpAt: ContinuousClock.Instant
    }

    private let bound = Mutex<Bound?>(nil)

    /// The first notification key a claim must consider, looked up on `connection` when the last
    /// look-up is older than ``refreshInterval``.
    func firstKey(_ connection: PostgresConnection) throws -> Int64 {
        let now = ContinuousClock.now
        if let known = bound.withLock({ $0 }), now - known.lookedUpAt < Self.refreshInterval {
            return known.firstKey
        }
        let firstKey = try Self.lookUp(connection)
        bound.withLock { $0 = Bound(firstKey: firstKey, lookedUpAt: now) }
        return firstKey
    }

    /// The first key of the oldest day holding a live QUEUED delivery, at most yesterday's. Each
    /// day is probed through its own partition of the queue index, oldest first, until one has a
    /// live row.
    static func lookUp(_ connection: PostgresConnection) throws -> Int64 {
        let day = try connection.query(sql: """
            WITH bounds AS (
                SELECT (SELECT min(notification_key) >> 40 FROM deliveries) AS oldest,
                       pigeon_day(now()) - 1 AS yesterday
            )
            SELECT COALESCE((
                SELECT d.day FROM bounds, generate_series(bounds.oldest, bounds.yesterday - 1) AS d(day)
                WHERE EXISTS (
                    SELECT 1 FROM deliveries x
                    WHERE x.notification_key >= pigeon_day_key(d.day)
                      AND x.notification_key < pigeon_day_key(d.day + 1)
                      AND x.next_attempt_at IS NOT NULL AND x.expires_at > now())
                ORDER BY d.day LIMIT 1), (SELECT yesterday FROM bounds))
            """).scalar.flatMap(Int64.init)
        guard let day else { throw PostgresError(.unexpectedResult, "no first live day") }
        return day << 40
    }
}
