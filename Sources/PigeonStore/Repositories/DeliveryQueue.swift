import Foundation
import PigeonCore
import PigeonDomain
import PostgresDriver

/// The delivery engine's work queue in PostgreSQL: the deliveries whose `next_attempt_at` is
/// set, by priority, then due time. A claim takes due rows that no live lease holds and leases
/// them in one row of `delivery_leases` (see ``DeliveryLeases``), without writing the rows
/// themselves; claims take turns per priority across every gateway process, so two never lease
/// one row. Outcomes are written in one statement per batch, only through a lease still held,
/// and only onto rows still in the queue: a state never moves backwards. A process that dies
/// leaves its leases to run out; the next claim ends them and claims their rows again.
package struct DeliveryQueue: Sendable {
    private let pool: PostgresPool
    private let liveDays = LiveDays()
    /// One claim at a time from this process per band of priorities: taken in turns, a claim
    /// starts where the last one ended, and never waits on the database for another of this
    /// process's claims. The urgent lane's claims take turns of their own: they never wait behind
    /// a blast's claim. The turn is taken before a pooled connection, so no connection waits for
    /// a turn.
    private let claimTurns = Turns()
    private let urgentClaimTurns = Turns()

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Up to `limit` due deliveries, leased to `owner` for `lease`, highest priority first. A
    /// delivery whose notification timed out is never claimed, however long a backlog held it: a
    /// one-time code must not reach a phone after its time; the expiry sweep makes it EXPIRED and
    /// reports it to the bank.
    ///
    /// The claim first ends the leases of its band whose time ran out (``DeliveryLeases/endExpired(_:band:)``),
    /// then takes the turn of every priority present in its band (``lockedPriorities(firstKey:band:)``),
    /// then reads the due rows of each, leaving out leased ones, and leases them
    /// (``claimStatement(firstKey:band:)``). Rows waiting for a retry — a million of them
    /// during an outage — are never walked, whatever their priority. Only the days that can still
    /// hold a claimable delivery are read (see ``LiveDays``), not every day kept.
    ///
    /// `band` narrows the claim to some priorities: the urgent lane claims `.atLeast(urgent)`,
    /// the others `.below(urgent)`.
    package func claim(owner: String, limit: Int, lease: Duration, band: PriorityBand = .all) async throws -> [ClaimedDelivery] {
        let leaseSeconds = String(lease.inSeconds)
        // The limit is a parameter, so one prepared statement serves every claim of the day
        // whatever room the lane had (written into the text, each new limit was a statement of
        // its own, planned anew: a sixth of PostgreSQL's time in a fan-out went to planning the
        // claim and its turns). The transaction's settings keep its generic plan walking the
        // queue index in order (``readInQueueOrder(_:)``), limit unknown or not.
        let limit = max(1, min(limit, 100_000))
        let turns: Turns
        if case .atLeast = band { turns = urgentClaimTurns } else { turns = claimTurns }
        return try await turns.take { try await pool.withConnection { connection in
            try connection.transaction { connection in
                let firstKey = try liveDays.firstKey(connection)
                try Self.readInQueueOrder(connection)
                try DeliveryLeases.endExpired(connection, band: band)
                let priorities = try connection.query(sql: Self.lockedPriorities(firstKey: firstKey, band: band), [String(Self.priorityTurnSpace)])
                    .decoded { try $0.decode("priority", as: Int.self) }
                guard !priorities.isEmpty else { return [] }
                return try connection.query(sql: Self.claimStatement(firstKey: firstKey, band: band),
                                            [owner, leaseSeconds, PostgresArray.encode(priorities.map(String.init)), String(limit)]).named
                    .map { row throws(PostgresError) in
                        // A row that does not decode fails the claim, whose transaction then rolls
                        // back: it is never left leased to an owner that cannot push it.
                        do throws(PostgresError) {
                            let pending = try row.decodeIfPresent("pending_devices", as: String.self)
                                .map { PostgresArray.decode($0).compactMap { $0.flatMap(Int64.init) } }
                            return ClaimedDelivery(
                                notificationKey: try row.decode("notification_key"), userId: try row.decode("user_id"),
                                userFolded: try row.decode("user_folded"), position: try row.decode("position"),
                                attempt: try row.decode("attempt"), expiresAt: try row.decode("expires_at"),
                                pendingDevices: pending, alreadySent: try row.decode("state", as: DeliveryState.self) == .sent,
                                priority: try row.decode("priority"), lease: try row.decode("lease"))
                        } catch {
                            let key = (try? row.decodeIfPresent("notification_key", as: Int64.self)).flatMap { $0 }.map(String.init) ?? "NULL"
                            let position = (try? row.decodeIfPresent("position", as: Int.self)).flatMap { $0 }.map(String.init) ?? "NULL"
                            throw PostgresError(.unexpectedResult, "a claimed delivery row did not decode (notification_key \(key), position \(position)): \(error.message); the claim is rolled back")
                        }
                    }
                    .sorted { $0.priority > $1.priority }
            }
        } }
    }

    /// Each priority present among the queue rows of `band`, highest first, each one's turn taken
    /// (a transaction-level advisory lock per priority, in that order, so claims never deadlock):
    /// claims of one priority take turns across every gateway process, so a claim never reads
    /// rows another is leasing at that moment. An advisory lock writes no WAL, where a row lock
    /// (`FOR UPDATE`) writes a record for every row. The urgent lane's priorities are not the
    /// bulk lane's, so a code's claim never waits for a blast's; two gateways configured with
    /// different urgent thresholds still share the turns of the priorities both claim.
    /// `$1`: ``priorityTurnSpace`` (a parameter, so the statement is prepared and planned once a
    /// connection and day, not at every claim).
    static func lockedPriorities(firstKey: Int64, band: PriorityBand) -> String {
        priorities(dayRange(from: firstKey, band: band)) + """

        SELECT p.priority, pg_advisory_xact_lock($1::integer, p.priority) AS turn
        FROM priorities p WHERE p.priority IS NOT NULL
        """
    }

    /// The first key of the priorities' advisory locks (the second is the priority).
    static let priorityTurnSpace = 741_401_321

    /// The claim's due rows, leased: `$1` the owner, `$2` the lease in seconds, `$3` the
    /// priorities whose turns the claim holds, highest first, `$4` the most rows to claim. Per
    /// priority, the due rows in due order that no live lease lists (``DeliveryLeases/held``,
    /// probed as one hash built once a claim: the index is still walked in order, no sort), up to
    /// `$4` in all; then one lease row listing them. Answers each row with its attempt (this one
    /// included) and the lease's id.
    static func claimStatement(firstKey: Int64, band: PriorityBand = .all) -> String {
        let days = dayRange(from: firstKey, band: band)
        return """
        WITH \(DeliveryLeases.held(priorities: "$3::integer[]")), due AS MATERIALIZED (
            SELECT c.* FROM unnest($3::integer[]) AS p(priority)
            CROSS JOIN LATERAL (
                SELECT d.notification_key, d.user_id, d.user_folded, d.position, d.attempts + 1 AS attempt,
                       extract(epoch FROM d.expires_at)::double precision AS expires_at, d.priority, d.pending_devices, d.state
                FROM deliveries d
                WHERE d.next_attempt_at IS NOT NULL AND d.priority = p.priority AND \(days)
                  AND d.next_attempt_at <= now() AND d.expires_at > now()
                  AND (d.notification_key, d.position, d.user_folded) NOT IN (SELECT * FROM held)
                ORDER BY d.next_attempt_at
                LIMIT $4::bigint
            ) c
            LIMIT $4::bigint
        ), lease AS (
            INSERT INTO delivery_leases (owner, claimed_at, leased_until, remaining, lowest_key, highest_key,
                                         lowest_priority, highest_priority, notification_keys, users, positions)
            SELECT $1, clock_timestamp(), now() + make_interval(secs => $2::double precision), count(*), min(notification_key),
                   max(notification_key), min(priority), max(priority), array_agg(notification_key), array_agg(user_folded),
                   array_agg(position)
            FROM due HAVING count(*) > 0
            RETURNING id
        )
        SELECT due.*, (SELECT id FROM lease) AS lease FROM due
        """
    }

    /// Makes the rest of the transaction read the queue in its index's order. A send's day
    /// partition gets its rows moments before the engine claims them, long before autovacuum
    /// analyses it: from the empty partition's statistics the planner expects one due row and
    /// picks a bitmap scan that reads every due row and sorts them (on disk) for each claim —
    /// 190 ms a claim of 500 in a 100,000-recipient fan-out, the claims growing with the
    /// backlog. Walking the queue index in order stops after the rows the claim takes, whatever
    /// the statistics say.
    ///
    /// It also gives the transaction room to hash the rows leases hold (``DeliveryLeases/held``):
    /// a planner that expects the hash not to fit in `work_mem` compares every due row with every
    /// held row instead.
    static func readInQueueOrder(_ connection: PostgresConnection) throws {
        _ = try connection.query(sql: """
            SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true),
                   set_config('work_mem', '64MB', true)
            """)
    }

    /// The queue rows a claim can find, as a condition on `notification_key`: from `firstKey` (a
    /// literal, so the planner leaves out the days before it) up to tomorrow (the days created
    /// ahead are empty).
    static func dayRange(from firstKey: Int64, band: PriorityBand = .all) -> String {
        let days = "notification_key >= \(firstKey) AND notification_key < pigeon_day_key(pigeon_day(now()) + 2)"
        switch band {
        case .all: return days
        case .atLeast(let lowest): return days + " AND priority >= \(lowest)"
        case .below(let bound): return days + " AND priority < \(bound)"
        }
    }

    /// `WITH RECURSIVE priorities`: each priority present among the queue rows matching `days`,
    /// highest first, one index descent each (rows not yet due are never walked). The last row
    /// is NULL.
    static func priorities(_ days: String) -> String {
        """
        WITH RECURSIVE priorities AS (
            (SELECT priority FROM deliveries WHERE next_attempt_at IS NOT NULL AND \(days)
             ORDER BY priority DESC LIMIT 1)
            UNION ALL
            SELECT (SELECT d.priority FROM deliveries d
                    WHERE d.next_attempt_at IS NOT NULL AND d.priority < p.priority AND \(days)
                    ORDER BY d.priority DESC LIMIT 1)
            FROM priorities p WHERE p.priority IS NOT NULL
        )
        """
    }

    /// Writes the outcomes of deliveries `owner` holds, each through the lease it was claimed
    /// under, and counts an attempt for each. A result with a next attempt keeps its delivery in
    /// the queue for the devices it names (a SENT delivery too: its other devices are retried).
    /// Rows whose lease ended (it ran out and the next claim took them), that were written since
    /// their claim, or that left the queue meanwhile (acknowledged, expired) are left alone, so
    /// writing the same outcomes twice changes nothing the second time; a SENT delivery never
    /// goes back.
    /// Deliveries that became final without reaching a device within their notification's
    /// timeout are reported to the bank in the same statement (``ReachedNobody``).
    /// Returns how many rows changed.
    @discardableResult
    package func record(_ results: [DeliveryResult], owner: String) async throws -> Int {
        guard !results.isEmpty else { return 0 }
        do {
            return try await record(results, owner: owner, firstPushesPlain: true)
        } catch let error as PostgresError where error.isUniqueViolation {
            // A device's row a first attempt did not expect (see `firstPushesPlain`): the
            // statement wrote nothing, and runs again with every device's row upserted.
            return try await record(results, owner: owner, firstPushesPlain: false)
        }
    }

    /// ``record(_:owner:)``. With `firstPushesPlain`, the devices' rows of a delivery's first
    /// attempt are plain inserts: no earlier push of that delivery can have written one (a
    /// delivery's attempts count every claim whose pushes were recorded), and an `INSERT … ON
    /// CONFLICT` costs two WAL records (a speculative insert and its confirmation) where a
    /// plain one writes one. A later attempt's rows are upserted.
    private func record(_ results: [DeliveryResult], owner: String, firstPushesPlain: Bool) async throws -> Int {
        let parameters: [String?] = [
            owner,
            PostgresArray.encode(results.map { String($0.delivery.notificationKey) }),
            PostgresArray.encode(results.map(\.delivery.userFolded)),
            PostgresArray.encode(results.map { String($0.delivery.position) }),
            PostgresArray.encode(results.map(\.state.rawValue)),
            PostgresArray.encode(results.map { $0.nextAttemptAt.map { String($0.timeIntervalSince1970) } }),
            PostgresArray.encode(results.map { $0.error.map { String($0.prefix(500)) } }),
            // The key range prunes the update to the days the results belong to.
            String(results.map(\.delivery.notificationKey).min() ?? 0),
            String(results.map(\.delivery.notificationKey).max() ?? 0),
            PostgresArray.encode(results.map { "{" + $0.pendingDevices.map(String.init).joined(separator: ",") + "}" }),
        ] + Self.devicePushColumns(results, firstPushesPlain: firstPushesPlain)
            + [PostgresArray.encode(results.map { String($0.delivery.lease) })]
        return try await pool.withConnection { connection in
            // The deliveries' outcomes, and each pushed device's, in one statement: a device's
            // row is written only for a delivery this owner still held.
            try connection.query(sql: """
                WITH updated AS (
                UPDATE deliveries d
                SET state = v.state, attempts = d.attempts + 1, updated_at = now(), last_error = COALESCE(v.error, d.last_error),
                    next_attempt_at = CASE WHEN v.state = 'QUEUED' THEN COALESCE(to_timestamp(v.next_at), d.next_attempt_at)
                                           WHEN v.state = 'SENT' THEN to_timestamp(v.next_at) END,
                    pending_devices = CASE WHEN v.next_at IS NOT NULL THEN v.pending::bigint[]
                                           WHEN v.state = 'QUEUED' THEN d.pending_devices END,
                    reported_early_at = CASE WHEN \(ReachedNobody.condition(state: "v.state", expiresAt: "d.expires_at")) THEN now()
                                             ELSE d.reported_early_at END
                FROM unnest($2::bigint[], $3::text[], $4::integer[], $5::text[], $6::double precision[], $7::text[], $10::text[], $22::bigint[])
                     AS v(notification_key, user_folded, position, state, next_at, error, pending, lease)
                JOIN delivery_leases l ON l.id = v.lease AND l.owner = $1
                WHERE d.notification_key = v.notification_key AND d.user_folded = v.user_folded
                  AND d.position = v.position AND d.next_attempt_at IS NOT NULL
                  -- Held by that lease: not written since its claim (by an outcome, a hand-back, or
                  -- the end of an earlier lease that ran out).
                  AND d.updated_at <= l.claimed_at
                  -- A SENT delivery in the queue for its other devices stays SENT.
                  AND (d.state = 'QUEUED' OR v.state = 'SENT')
                  AND d.notification_key BETWEEN $8::bigint AND $9::bigint
                RETURNING d.notification_key, d.position, d.user_id, d.user_folded, d.reported_early_at = now() AS reached_nobody,
                          v.lease, d.next_attempt_at IS NOT NULL AS requeued
                ), \(ReachedNobody.reports(from: "updated"))
                , pushes AS (
                SELECT v.* FROM unnest($11::bigint[], $12::integer[], $13::bigint[], $14::text[], $15::text[], $16::text[], $17::text[],
                                       $18::text[], $19::text[], $20::text[], $21::boolean[])
                     AS v(notification_key, position, device_row_id, device_id, platform, app_id, token_masked, state, error, service_id, first)
                JOIN updated u ON u.notification_key = v.notification_key AND u.position = v.position
                ), first_written AS (
                INSERT INTO device_pushes (notification_key, position, device_row_id, device_id, platform, app_id, token_masked,
                                           state, last_error, service_id, sent_at, updated_at)
                SELECT v.notification_key, v.position, v.device_row_id, v.device_id, v.platform, v.app_id, v.token_masked,
                       v.state, v.error, v.service_id, CASE WHEN v.state = 'SENT' THEN now() END, now()
                FROM pushes v WHERE v.first
                RETURNING 1
                ), again_written AS (
                INSERT INTO device_pushes AS p (notification_key, position, device_row_id, device_id, platform, app_id, token_masked,
                                                state, last_error, service_id, sent_at, updated_at)
                SELECT v.notification_key, v.position, v.device_row_id, v.device_id, v.platform, v.app_id, v.token_masked,
                       v.state, v.error, v.service_id, CASE WHEN v.state = 'SENT' THEN now() END, now()
                FROM pushes v WHERE NOT v.first
                ON CONFLICT (notification_key, position, device_row_id) DO UPDATE
                SET state = EXCLUDED.state, attempts = p.attempts + 1, last_error = COALESCE(EXCLUDED.last_error, p.last_error),
                    service_id = COALESCE(EXCLUDED.service_id, p.service_id), sent_at = COALESCE(p.sent_at, EXCLUDED.sent_at),
                    token_masked = EXCLUDED.token_masked, updated_at = now()
                RETURNING 1
                ), \(DeliveryLeases.written(from: "updated"))
                SELECT count(*) FROM updated
                """, parameters).scalar(as: Int.self, "the count of deliveries recorded")
        }
    }

    /// The per-device outcomes of `results` as the columns of ``record(_:owner:)``'s parameters
    /// `$11`…`$21` (the last: whether the row is a first attempt's, written as a plain insert).
    private static func devicePushColumns(_ results: [DeliveryResult], firstPushesPlain: Bool) -> [String?] {
        let pushes = results.flatMap { result in result.devices.map { (result.delivery, $0) } }
        func column(_ value: (ClaimedDelivery, DevicePush) -> String?) -> String? { PostgresArray.encode(pushes.map(value)) }
        return [
            column { delivery, _ in String(delivery.notificationKey) },
            column { delivery, _ in String(delivery.position) },
            column { _, push in String(push.deviceRowId) },
            column { _, push in push.deviceId },
            column { _, push in push.platform.rawValue },
            column { _, push in push.appId },
            column { _, push in push.maskedToken },
            column { _, push in push.state.rawValue },
            column { _, push in push.error.map { String($0.prefix(500)) } },
            column { _, push in push.serviceId.map { String($0.prefix(200)) } },
            column { delivery, _ in firstPushesPlain && delivery.attempt == 1 ? "t" : "f" },
        ]
    }

    /// Hands back every delivery `owner` still holds, due at once, for another process (a
    /// gateway stopping before its in-flight sends finished): its leases end, each delivery they
    /// still held counted as an attempt (its push may have been on the wire). A late `record` by
    /// `owner` then changes nothing. Returns how many deliveries were released.
    @discardableResult
    package func release(owner: String) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.transaction { connection in try DeliveryLeases.end(ownedBy: owner, connection) }
        }
    }

    /// Hands back `deliveries` that `owner` holds, due again after `delay`, without counting
    /// their claim as an attempt: they were not pushed (their push service was slow, and the
    /// engine would not hold them waiting). Returns how many were handed back.
    @discardableResult
    package func handBack(_ deliveries: [ClaimedDelivery], owner: String, delay: Duration, error: String? = nil) async throws -> Int {
        guard !deliveries.isEmpty else { return 0 }
        let keys = deliveries.map(\.notificationKey)
        let parameters: [String?] = [
            owner, String(delay.inSeconds), error.map { String($0.prefix(500)) },
            PostgresArray.encode(keys.map(String.init)), PostgresArray.encode(deliveries.map(\.userFolded)),
            PostgresArray.encode(deliveries.map { String($0.position) }), PostgresArray.encode(deliveries.map { String($0.lease) }),
            String(keys.min() ?? 0), String(keys.max() ?? 0),
        ]
        return try await pool.withConnection { connection in
            try connection.query(sql: Self.handBackStatement, parameters).scalar(as: Int.self, "the count of deliveries handed back")
        }
    }

    /// Hands back deliveries through their leases: `$1` the owner, `$2` the delay in seconds,
    /// `$3` the error to keep (or NULL), `$4`…`$7` the deliveries' keys, folded users, positions
    /// and leases, `$8`/`$9` the lowest and highest key. Answers the count handed back.
    static let handBackStatement = """
        WITH handed AS (
        UPDATE deliveries d
        SET updated_at = now(), next_attempt_at = now() + make_interval(secs => $2::double precision),
            last_error = COALESCE($3, d.last_error)
        FROM unnest($4::bigint[], $5::text[], $6::integer[], $7::bigint[]) AS b(notification_key, user_folded, position, lease)
        JOIN delivery_leases l ON l.id = b.lease AND l.owner = $1
        WHERE d.notification_key = b.notification_key AND d.user_folded = b.user_folded AND d.position = b.position
          AND d.next_attempt_at IS NOT NULL AND d.updated_at <= l.claimed_at
          AND d.notification_key BETWEEN $8::bigint AND $9::bigint
        RETURNING b.lease, d.notification_key, d.position, d.user_folded, true AS requeued
        ), \(DeliveryLeases.written(from: "handed"))
        SELECT count(*) FROM handed
        """

    /// How long the longest-waiting due delivery no lease holds has been due, in seconds (0 when
    /// none is due): the engine falling behind shows here first. Read through the queue index,
    /// one descent per priority present (never a walk of the backlog), past the rows leases hold.
    package func oldestDueAge() async throws -> Double {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.transaction { connection in
                let firstKey = try liveDays.firstKey(connection)
                let days = Self.dayRange(from: firstKey)
                try Self.readInQueueOrder(connection)
                return try connection.query(sql: Self.priorities(days) + """

                    , \(DeliveryLeases.held())
                    SELECT COALESCE(extract(epoch FROM now() - min(o.due)), 0)::double precision
                    FROM priorities p CROSS JOIN LATERAL (
                        SELECT d.next_attempt_at AS due FROM deliveries d
                        WHERE d.next_attempt_at IS NOT NULL AND d.priority = p.priority AND \(days) AND d.expires_at > now()
                          AND (d.notification_key, d.position, d.user_folded) NOT IN (SELECT * FROM held)
                        ORDER BY d.next_attempt_at LIMIT 1) o
                    WHERE p.priority IS NOT NULL AND o.due <= now()
                    """).scalar(as: Double.self, "the oldest due delivery's wait")
            }
        }
    }

    /// QUEUED deliveries due now or later (the queue depth for metrics): counted exactly up to
    /// `exactUpTo`; a deeper queue is estimated from the queue index's statistics (kept by
    /// autovacuum), so sampling never walks a million-row backlog.
    package func depth(exactUpTo: Int = 10_000) async throws -> Int {
        let bound = max(1, exactUpTo)
        return try await pool.withConnection(idempotent: true) { connection in
            let counted = try connection.query(sql: """
                SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE next_attempt_at IS NOT NULL LIMIT \(bound + 1)) AS q
                """).scalar(as: Int.self, "the queue's counted depth")
            guard counted > bound else { return counted }
            let estimated = try connection.query(sql: """
                SELECT COALESCE(sum(GREATEST(c.reltuples, 0)), 0)::bigint FROM pg_inherits i
                JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'deliveries_claimable'::regclass
                """).scalar(as: Int.self, "the queue's estimated depth")
            return max(counted, estimated)
        }
    }
}
