import Foundation
import PigeonCore
import PigeonDomain
import PostgresDriver

/// Outbox health for /metrics.
package struct OutboxStatistics: Sendable, Equatable {
    package var depth: Int
    package var oldestAgeSeconds: Double
    /// Reports in the dead-letter table.
    package var dead: Int
}

/// The durable outbox of reports to the bank. Reports are written in the transaction that
/// changes the state they report (``enqueue(_:_:)``), claimed under a lease like deliveries (so
/// several gateways never send the same row at once and a crashed sender's rows come due again),
/// and deleted only after the bank acknowledged them: at least once, never lost.
package struct Outbox: Sendable {
    private let pool: PostgresPool
    /// Where a report dead-lettered at its claim (its payload does not decode) is logged.
    private let logger: Logger

    package init(pool: PostgresPool, logger: Logger = .silent) {
        self.pool = pool
        self.logger = logger
    }

    /// Adds a report inside the caller's transaction.
    package static func enqueue(_ report: BankReport, _ connection: PostgresConnection) throws {
        _ = try connection.query("INSERT INTO outbox (kind, payload) VALUES (\(report.kind), \(report.payload)::jsonb)")
    }

    /// Up to `limit` due reports, oldest first, each leased for `lease`.
    ///
    /// Only the kinds this binary can send are claimed: a report a newer version wrote waits for
    /// a process that knows it (a rolling upgrade loses nothing). A report of a known kind whose
    /// payload does not decode is moved to the dead letters in the same transaction, with why —
    /// an operator sees it there — rather than vanishing from the claim while it stays leased, or
    /// failing every claim after it.
    package func claim(limit: Int, lease: Duration) async throws -> [ClaimedReport] {
        let seconds = String(lease.inSeconds)
        // A literal limit: a generic plan that does not know it would sort the whole outbox.
        let limit = max(1, min(limit, 10_000))
        let (claimed, undecodable) = try await pool.transaction { connection in
            let rows = try connection.query(sql: """
                WITH due AS (
                    SELECT id FROM outbox WHERE next_attempt_at <= now() AND kind = ANY($2::text[])
                    ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
                )
                UPDATE outbox o SET attempts = o.attempts + 1,
                                    next_attempt_at = now() + make_interval(secs => $1::double precision)
                FROM due WHERE o.id = due.id
                RETURNING o.id, o.kind, o.payload::text AS payload, o.attempts, extract(epoch FROM o.created_at)::double precision AS created_at
                """, [seconds, PostgresArray.encode(BankReport.storedKinds)]).named
            var claimed: [ClaimedReport] = []
            var undecodable: [(id: String, kind: String)] = []
            for row in rows {
                let id = try row.decode("id", as: Int64.self)
                let kind = try row.decode("kind", as: String.self)
                guard let report = BankReport(kind: kind, payload: try row.decode("payload")) else {
                    undecodable.append((String(id), kind))
                    continue
                }
                claimed.append(ClaimedReport(id: id, report: report, attempt: try row.decode("attempts"), createdAt: try row.decode("created_at")))
            }
            if !undecodable.isEmpty {
                try connection.query("""
                    WITH moved AS (DELETE FROM outbox WHERE id = ANY(\(PostgresArray.encode(undecodable.map(\.id)))::bigint[]) RETURNING id, kind, payload, attempts, created_at)
                    INSERT INTO outbox_dead (id, kind, payload, attempts, last_error, created_at)
                    SELECT id, kind, payload, attempts, \(BankReport.undecodablePayload), created_at FROM moved
                    ON CONFLICT (id) DO NOTHING
                    """)
            }
            return (claimed.sorted { $0.id < $1.id }, undecodable)
        }
        for report in undecodable {
            logger.error("report dead-lettered at its claim: its stored payload does not decode as its kind; 'pigeon outbox list' shows it",
                         metadata: ["kind": report.kind, "id": report.id])
        }
        return claimed
    }

    /// The bank acknowledged these reports.
    package func complete(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        _ = try await pool.withConnection { connection in
            try connection.query("DELETE FROM outbox WHERE id = ANY(\(ids)::bigint[])")
        }
    }

    /// Claimed reports that were not sent (the sender stopped first): due again at once, the
    /// claim not counted as an attempt.
    package func handBack(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        _ = try await pool.withConnection { connection in
            try connection.query("UPDATE outbox SET next_attempt_at = now(), attempts = greatest(0, attempts - 1) WHERE id = ANY(\(ids)::bigint[])")
        }
    }

    /// A send failed: try again at `retryAt`.
    package func reschedule(_ id: Int64, at retryAt: Date, error: String) async throws {
        _ = try await pool.withConnection { connection in
            try connection.query("""
                UPDATE outbox SET next_attempt_at = to_timestamp(\(retryAt.timeIntervalSince1970)::double precision), last_error = \(String(error.prefix(500)))
                WHERE id = \(id)
                """)
        }
    }

    /// Moves a report that failed for too long to the dead letters, with its last error.
    package func bury(_ id: Int64, error: String) async throws {
        _ = try await pool.withConnection { connection in
            try connection.query("""
                WITH moved AS (DELETE FROM outbox WHERE id = \(id) RETURNING id, kind, payload, attempts, created_at)
                INSERT INTO outbox_dead (id, kind, payload, attempts, last_error, created_at)
                SELECT id, kind, payload, attempts, \(String(error.prefix(500))), created_at FROM moved
                ON CONFLICT (id) DO NOTHING
                """)
        }
    }

    /// Dead letters, oldest death first (at most `limit`).
    package func deadLetters(limit: Int = 1_000) async throws -> [DeadReport] {
        let limit = max(1, min(limit, 100_000))
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT id, kind, payload::text AS payload, attempts, last_error,
                       extract(epoch FROM created_at)::double precision AS created_at, extract(epoch FROM died_at)::double precision AS died_at
                FROM outbox_dead ORDER BY died_at, id LIMIT \(literal: limit)
                """).decoded { row in
                // Listed even when its payload does not decode: that is why some died.
                let kind = try row.decode("kind", as: String.self)
                let report = BankReport(kind: kind, payload: try row.decode("payload"))
                return DeadReport(id: try row.decode("id"), kind: kind, notificationId: report?.subject ?? "(undecodable payload)",
                                  users: report?.concerned ?? [], attempts: try row.decode("attempts"),
                                  lastError: try row.decodeIfPresent("last_error"),
                                  createdAt: try row.decode("created_at"), diedAt: try row.decode("died_at"),
                                  reason: report?.expiryReason)
            }
        }
    }

    /// Puts dead letters back into the outbox, due now with a fresh age (all of them when `ids`
    /// is nil). Returns the ids re-queued: an id given that is not among them was no dead letter
    /// (unknown, already re-queued, or still waiting).
    package func requeue(_ ids: [Int64]?) async throws -> [Int64] {
        // One statement: the move is atomic without a transaction of its own.
        try await pool.withConnection { connection in
            try connection.query("""
                WITH moved AS (DELETE FROM outbox_dead WHERE \(ids.map { PostgresArray.encode($0.map(String.init)) })::bigint[] IS NULL OR id = ANY(\(ids.map { PostgresArray.encode($0.map(String.init)) })::bigint[]) RETURNING id, kind, payload)
                INSERT INTO outbox (id, kind, payload) SELECT id, kind, payload FROM moved RETURNING id
                """).decoded { try $0.decode("id", as: Int64.self) }
        }
    }

    /// Reports waiting, how long the oldest has waited, and the dead letters.
    package func statistics() async throws -> OutboxStatistics {
        try await pool.withConnection(idempotent: true) { connection in
            let statistics = try connection.query(sql: """
                SELECT count(*) AS depth, COALESCE(extract(epoch FROM now() - min(created_at)), 0)::double precision AS oldest_age,
                       (SELECT count(*) FROM outbox_dead) AS dead
                FROM outbox
                """).decodedFirst { row in
                OutboxStatistics(depth: try row.decode("depth"), oldestAgeSeconds: try row.decode("oldest_age"), dead: try row.decode("dead"))
            }
            guard let statistics else { throw PostgresError(.unexpectedResult, "counting the outbox returned no row") }
            return statistics
        }
    }
}

/// The outbox row form of a report: its kind and a JSON payload.
extension BankReport {
    var payload: String {
        let object: [String: Any] = switch self {
        case .pushIsOpened(let id, let user): ["notificationId": id, "users": [user]]
        case .notificationExpired(let id, let users, let reason): ["notificationId": id, "users": users, "reason": reason.rawValue]
        case .passUpdateNotFetched(let pass, let count):
            ["passTypeIdentifier": pass.passTypeIdentifier, "serialNumber": pass.serialNumber, "deviceCount": count]
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Every kind ``init(kind:payload:)`` reads: what this binary's outbox sender claims.
    static let storedKinds = ["pushIsOpened", "reportNotificationExpired", "reportPassUpdateNotFetched"]

    /// The dead letter's error of a report whose payload does not decode as its kind.
    static let undecodablePayload = "the stored payload does not decode as its kind: moved here at its claim"

    init?(kind: String, payload: String) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any] else { return nil }
        if kind == "reportPassUpdateNotFetched" {
            guard let type = object["passTypeIdentifier"] as? String, let serial = object["serialNumber"] as? String,
                  let count = (object["deviceCount"] as? NSNumber)?.intValue else { return nil }
            self = .passUpdateNotFetched(pass: PassIdentity(passTypeIdentifier: type, serialNumber: serial), deviceCount: count)
            return
        }
        guard let id = object["notificationId"] as? String, let users = object["users"] as? [String] else { return nil }
        switch kind {
        case "pushIsOpened":
            guard let user = users.first else { return nil }
            self = .pushIsOpened(notificationId: id, user: user)
        case "reportNotificationExpired":
            // Written before reasons were (or by the expiry sweep of an older version): a timeout.
            let reason = (object["reason"] as? String).map { ExpiryReason(rawValue: $0) } ?? .timeout
            guard let reason else { return nil }
            self = .notificationExpired(notificationId: id, users: users, reason: reason)
        default:
            return nil
        }
    }
}
