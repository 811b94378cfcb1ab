import PigeonDomain
import PostgresDriver

/// The delivery queue's leases (`delivery_leases`, migration 0020): one row per claim, listing
/// the deliveries it took, instead of a write to each delivery. No claim takes a delivery a lease
/// that has not run out lists. An outcome or hand-back is written through its lease only while
/// the delivery was not written since the claim (`updated_at` not after `claimed_at`), so the
/// same outcome written twice changes nothing the second time. `claimed_at` is the clock's time
/// as the claim statement runs, after its snapshot, not its transaction's start (`now()`): a
/// write the claim saw (a retry's outcome, stamped with its own transaction's start) is then
/// always before it. With the transaction's start, a claim that began before a retry's outcome
/// was written and read the queue after it took the retry under a lease its outcome could not be
/// written through: the push was made, its outcome dropped, and the delivery pushed again when
/// the lease ran out (found on a loaded machine, the first retry due within a second).
///
/// A lease row ends when every delivery it listed was written back through it (`remaining`
/// reaches 0), when its gateway stops (``end(ownedBy:_:)``), or after its time ran out, by the
/// next claim of its priorities (``endExpired(_:band:)``). Until then it keeps its deliveries from other claims, also
/// one written back to the queue early (a retry, a hand-back): such a delivery waits for the
/// rest of its batch, seconds as a rule, at most the lease. (Two writes through one lease at the
/// same moment — an outcome and a hand-back — may leave it counted short: it then lingers until
/// it runs out, like a lease whose delivery was acknowledged in flight.) Ending a lease that still held
/// deliveries counts an attempt for each (its push may have been on the wire) and marks them
/// written, so a late outcome through that lease changes nothing.
enum DeliveryLeases {
    /// `held`: every delivery a live lease lists, as (notification_key, position, user_folded) —
    /// a few thousand rows at most (what the gateways have in flight), read once per statement.
    /// Probed as `(…) NOT IN (SELECT * FROM held)`: one hash, not a comparison per held row.
    /// With `priorities` (an SQL array expression), only the leases holding one of them: a code's
    /// claim does not hash the blast's deliveries in flight.
    static func held(priorities: String? = nil) -> String {
        let overlapping = priorities.map { " AND l.highest_priority >= (SELECT min(p) FROM unnest(\($0)) AS p)"
            + " AND l.lowest_priority <= (SELECT max(p) FROM unnest(\($0)) AS p)" } ?? ""
        return """
            held AS MATERIALIZED (
                SELECT r.notification_key, r.position, r.user_folded
                FROM delivery_leases l
                CROSS JOIN LATERAL unnest(l.notification_keys, l.users, l.positions) AS r(notification_key, user_folded, position)
                WHERE l.leased_until > now()\(overlapping))
            """
    }

    /// Common table expressions counting the deliveries `cte` wrote back against their leases
    /// (one row per delivery, with `lease`, `notification_key`, `position`, `user_folded`, and
    /// `requeued`: whether it stays in the queue). A lease with none left is deleted; the others
    /// count down, and a delivery back in the queue (a retry, a hand-back) leaves its lease's
    /// lists so the next claim can take it when it is due — the lists are rewritten only then,
    /// not for the final outcomes a fan-out writes. Only rows actually written count, so writing
    /// the same outcomes again counts nothing twice. A delivery that left the queue another way
    /// while leased (an acknowledgement, the expiry sweep) is never counted: its lease ends when
    /// it runs out.
    static func written(from cte: String) -> String {
        func kept(_ column: String) -> String {
            """
            CASE WHEN w.requeued_keys IS NULL THEN l.\(column) ELSE COALESCE((
                SELECT array_agg(x.\(column) ORDER BY x.ordinal)
                FROM unnest(l.notification_keys, l.users, l.positions) WITH ORDINALITY AS x(notification_keys, users, positions, ordinal)
                WHERE (x.notification_keys, x.positions, x.users) NOT IN (
                    SELECT * FROM unnest(w.requeued_keys, w.requeued_positions, w.requeued_users))), '{}') END
            """
        }
        return """
        written_per_lease AS (
            SELECT lease, count(*)::integer AS n,
                   array_agg(notification_key) FILTER (WHERE requeued) AS requeued_keys,
                   array_agg(position) FILTER (WHERE requeued) AS requeued_positions,
                   array_agg(user_folded) FILTER (WHERE requeued) AS requeued_users
            FROM \(cte) GROUP BY lease),
        leases_done AS (
            DELETE FROM delivery_leases l USING written_per_lease w WHERE l.id = w.lease AND l.remaining <= w.n RETURNING 1),
        leases_left AS (
            UPDATE delivery_leases l SET remaining = l.remaining - w.n,
                notification_keys = \(kept("notification_keys")), users = \(kept("users")), positions = \(kept("positions"))
            FROM written_per_lease w
            WHERE l.id = w.lease AND l.remaining > w.n RETURNING 1)
        """
    }

    /// Ends every lease of `band`'s priorities whose time ran out (a gateway that died holding
    /// it, or one that took longer than its lease). Runs at the start of every claim, in its
    /// transaction: one probe of the leases' end index when none did. A claim ends only the
    /// leases it could meet: a one-time code's claim never does the work of a dead gateway's
    /// blast. Returns how many deliveries they still held.
    @discardableResult
    static func endExpired(_ connection: PostgresConnection, band: PriorityBand = .all) throws -> Int {
        switch band {
        case .all: try end(where: "leased_until <= now()", [], connection)
        case .atLeast(let lowest): try end(where: "leased_until <= now() AND highest_priority >= $1::integer", [String(lowest)], connection)
        case .below(let bound): try end(where: "leased_until <= now() AND lowest_priority < $1::integer", [String(bound)], connection)
        }
    }

    /// Ends every lease `owner` holds (a stopping gateway's). Returns how many deliveries they
    /// still held.
    @discardableResult
    static func end(ownedBy owner: String, _ connection: PostgresConnection) throws -> Int {
        try end(where: "owner = $1", [owner], connection)
    }

    private static func end(where condition: String, _ parameters: [String?], _ connection: PostgresConnection) throws -> Int {
        // Another transaction ending the same lease (two claims at once) skips it.
        let leases = try connection.query(sql: """
            SELECT id, lowest_key, highest_key FROM delivery_leases WHERE \(condition) FOR UPDATE SKIP LOCKED
            """, parameters).decoded { row in
            (id: try row.decode("id", as: Int64.self), lowest: try row.decode("lowest_key", as: Int64.self),
             highest: try row.decode("highest_key", as: Int64.self))
        }
        var held = 0
        for lease in leases {
            // The key range prunes the update to the days its deliveries belong to.
            held += try connection.query(sql: """
                WITH ended AS (
                    DELETE FROM delivery_leases WHERE id = $1 RETURNING claimed_at, notification_keys, users, positions)
                UPDATE deliveries d SET attempts = d.attempts + 1, updated_at = now()
                FROM ended l
                CROSS JOIN LATERAL unnest(l.notification_keys, l.users, l.positions) AS r(notification_key, user_folded, position)
                WHERE d.notification_key = r.notification_key AND d.user_folded = r.user_folded AND d.position = r.position
                  AND d.next_attempt_at IS NOT NULL AND d.updated_at <= l.claimed_at
                  AND d.notification_key BETWEEN $2::bigint AND $3::bigint
                """, [String(lease.id), String(lease.lowest), String(lease.highest)]).affected
        }
        return held
    }
}
