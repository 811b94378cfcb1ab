import Foundation
import PigeonDomain
import PostgresDriver


/// Acknowledgements from the app (`delivered`, `opened`) and the notification details it may
/// read. Opening writes the `pushIsOpened` report to the outbox in the same transaction as the
/// state change, so the bank hears of it exactly when the state changed.
package struct AcknowledgementStore: Sendable {
    private let pool: PostgresPool
    private let identifiers: UserIdentifiers
    /// How closely a device's last reach is kept (``ReachPrecision``).
    private let reachPrecision: Duration

    /// `reachPrecision`: ``ReachPrecision/forExpiry(_:)`` of the hygiene period the gateway runs
    /// with (an hour when not given).
    package init(pool: PostgresPool, identifiers: UserIdentifiers, reachPrecision: Duration = DeviceReach.defaultPrecision) {
        self.pool = pool
        self.identifiers = identifiers
        self.reachPrecision = reachPrecision
    }

    /// Moves `user`'s delivery of `notificationId` to `target` (`.delivered` or `.read`) if the
    /// state machine allows it; the acknowledging device counts as reached (``DeviceReach``).
    package func acknowledge(notificationId: String, user: String, device: Int64, target: DeliveryState) async throws -> AcknowledgementResult {
        let sources = DeliveryState.allCases.filter { $0.canAdvance(to: target) }.map(\.rawValue)
        let (column, key) = userMatch(user)
        return try await pool.transaction { connection in
            guard let notificationKey = try NotificationStore.key(of: notificationId, connection) else { return .notFound }
            let rows = try connection.query("""
                SELECT state, position FROM deliveries
                WHERE notification_key = \(notificationKey) AND user_folded = \(user.lowercased()) AND \(sql: column) = \(key)
                ORDER BY position FOR UPDATE
                """).decoded { (state: try $0.decode("state", as: DeliveryState.self), position: try $0.decode("position", as: Int.self)) }
            guard !rows.isEmpty else { return .notAddressed }
            let states = rows.map(\.state)
            // Leaving QUEUED also leaves the queue; the state itself is in no index, so an
            // acknowledgement of a SENT delivery stays on its page (a HOT update). In the same
            // statement, which phone said so: its push row (when it was pushed to) keeps the first
            // time (no index covers these columns either).
            let changed = try connection.query("""
                WITH stamped AS (
                    UPDATE device_pushes SET delivered_at = COALESCE(delivered_at, now()),
                           opened_at = CASE WHEN \(target == .read)::boolean THEN COALESCE(opened_at, now()) ELSE opened_at END
                    WHERE notification_key = \(notificationKey) AND device_row_id = \(device) AND position = ANY(\(rows.map(\.position))::integer[])
                )
                UPDATE deliveries SET state = \(target.rawValue), updated_at = now(), next_attempt_at = NULL
                WHERE notification_key = \(notificationKey) AND user_folded = \(user.lowercased()) AND \(sql: column) = \(key)
                  AND state = ANY(\(sources)::text[])
                RETURNING user_id
                """)
                .decoded { try $0.decode("user_id", as: String.self) }
            try DeviceReach.record(deviceIds: [device], precision: reachPrecision, connection)
            if target == .read, let reported = changed.first {
                try Outbox.enqueue(.pushIsOpened(notificationId: notificationId, user: reported), connection)
            }
            if !changed.isEmpty { return .recorded(target) }
            return .recorded(states.first ?? target)
        }
    }

    /// The notification (content only), if it was addressed to `user`.
    package func notification(id: String, user: String) async throws -> NotificationLookup {
        let (column, key) = userMatch(user)
        return try await pool.withConnection { connection in
            guard let notificationKey = try NotificationStore.key(of: id, connection),
                  let notification = try NotificationStore.notification(key: notificationKey, recipients: false, connection) else {
                return .notFound
            }
            let addressed = try !connection.query("""
                SELECT 1 FROM deliveries
                WHERE notification_key = \(notificationKey) AND user_folded = \(user.lowercased()) AND \(sql: column) = \(key) LIMIT 1
                """).isEmpty
            return addressed ? .found(notification) : .notAddressed
        }
    }

    /// The deliveries table is keyed by `user_folded`; case-sensitive ids also match `user_id`.
    private func userMatch(_ user: String) -> (column: StaticOrCodeSQL, key: String) {
        (identifiers.userColumnSQL, identifiers.comparable(user))
    }
}
