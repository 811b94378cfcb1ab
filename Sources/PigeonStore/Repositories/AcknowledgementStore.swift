import Foundation
import PigeonDomain


/// Acknowledgements from the app (`delivered`, `opened`) and the notification details it may
/// read. Opening writes the `pushIsOpened` report to the outbox in the same transaction as the
/// state change, so the bank hears of it exactly when the state changed.
package struct AcknowledgementStore: Sendable {
    private let pool: PostgresPool
    private let identifiers: UserIdentifiers

    package init(pool: PostgresPool, identifiers: UserIdentifiers) {
        self.pool = pool
        self.identifiers = identifiers
    }

    /// Moves `user`'s delivery of `notificationId` to `target` (`.delivered` or `.read`) if the
    /// state machine allows it; the acknowledging device counts as reached (``DeviceReach``).
    package func acknowledge(notificationId: String, user: String, device: Int64, target: DeliveryState) async throws -> AcknowledgementResult {
        let sources = PostgresArray.encode(DeliveryState.allCases.filter { $0.canAdvance(to: target) }.map(\.rawValue))
        let (column, key) = userMatch(user)
        return try await pool.transaction { connection in
            guard let notificationKey = try NotificationStore.key(of: notificationId, connection) else { return .notFound }
            let notification = String(notificationKey)
            let rows = try connection.query(sql: """
                SELECT state, position FROM deliveries
                WHERE notification_key = $1 AND user_folded = $2 AND \(column) = $3
                ORDER BY position FOR UPDATE
                """, [notification, user.lowercased(), key]).decoded { (state: try $0.decode("state", as: DeliveryState.self), position: try $0.decode("position", as: Int.self)) }
            guard !rows.isEmpty else { return .notAddressed }
            let states = rows.map(\.state)
            // Leaving QUEUED also leaves the queue; the state itself is in no index, so an
            // acknowledgement of a SENT delivery stays on its page (a HOT update). In the same
            // statement, which phone said so: its push row (when it was pushed to) keeps the first
            // time (no index covers these columns either).
            let changed = try connection.query(sql: """
                WITH stamped AS (
                    UPDATE device_pushes SET delivered_at = COALESCE(delivered_at, now()),
                           opened_at = CASE WHEN $8::boolean THEN COALESCE(opened_at, now()) ELSE opened_at END
                    WHERE notification_key = $1 AND device_row_id = $6 AND position = ANY($7::integer[])
                )
                UPDATE deliveries SET state = $4, updated_at = now(), lease_owner = NULL, next_attempt_at = NULL
                WHERE notification_key = $1 AND user_folded = $2 AND \(column) = $3 AND state = ANY($5::text[])
                RETURNING user_id
                """, [notification, user.lowercased(), key, target.rawValue, sources, String(device),
                      PostgresArray.encode(rows.map { String($0.position) }), target == .read ? "true" : "false"])
                .decoded { try $0.decode("user_id", as: String.self) }
            try DeviceReach.record(deviceIds: [device], connection)
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
            let addressed = try !connection.query(sql: """
                SELECT 1 FROM deliveries WHERE notification_key = $1 AND user_folded = $2 AND \(column) = $3 LIMIT 1
                """, [String(notificationKey), user.lowercased(), key]).isEmpty
            return addressed ? .found(notification) : .notAddressed
        }
    }

    /// The deliveries table is keyed by `user_folded`; case-sensitive ids also match `user_id`.
    private func userMatch(_ user: String) -> (column: String, key: String) {
        (identifiers.userColumn, identifiers.comparable(user))
    }
}
