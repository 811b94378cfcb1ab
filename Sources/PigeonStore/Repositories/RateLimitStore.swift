import Foundation
import PigeonDomain
import PostgresDriver

/// Fixed-window counters in the database, shared by every gateway process on it: one atomic
/// statement counts an attempt and tells whether it is within its limit, so concurrent attempts
/// can never all slip under it.
package struct RateLimitStore: Sendable {
    /// The outcome of counting one attempt.
    package typealias Decision = RateLimitDecision

    private let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Counts one attempt in `bucket`, whose window lasts `window` from its first attempt, and
    /// allows it when the count is at most `limit`.
    package func take(bucket: String, limit: Int, window: Duration) async throws -> Decision {
        let seconds = Double(window.components.seconds)
        return try await pool.withConnection { connection in
            guard let (count, secondsLeft) = try connection.query("""
                INSERT INTO rate_limits AS r (bucket, window_ends_at, count)
                VALUES (\(bucket), now() + make_interval(secs => \(seconds)::double precision), 1)
                ON CONFLICT (bucket) DO UPDATE SET
                    count = CASE WHEN r.window_ends_at <= now() THEN 1 ELSE r.count + 1 END,
                    window_ends_at = CASE WHEN r.window_ends_at <= now()
                                          THEN EXCLUDED.window_ends_at
                                          ELSE r.window_ends_at END
                RETURNING count, ceil(extract(epoch FROM r.window_ends_at - now()))::integer AS seconds_left
                """).decodedFirst({ row in
                (try row.decode("count", as: Int.self), try row.decode("seconds_left", as: Int.self))
            }) else {
                throw PostgresError(.unexpectedResult, "counting a rate-limited attempt returned nothing")
            }
            return Decision(count: count, retryAfterSeconds: max(1, secondsLeft), allowed: count <= limit)
        }
    }
}
