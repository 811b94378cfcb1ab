import Foundation
import PigeonDomain
import PigeonStore
import PostgresDriver

/// Sends stored in PostgreSQL for the expiry contracts: to `users` (subscribed first), with
/// their deadline one second gone when `overdue`, else ten minutes ahead.
enum OverdueSends {
    static func store(_ id: String, users: [String], overdue: Bool, pool: PostgresPool, identifiers: UserIdentifiers) async throws {
        let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
        for user in users {
            try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "d", platform: .ios, pushToken: "ab")
        }
        _ = try await NotificationStore(pool: pool, identifiers: identifiers).send(
            PushNotification(id: id, recipients: users, timeoutSeconds: 600, pushContent: PushContent(text: "t", type: .universal)))
        guard overdue else { return }
        try await pool.withConnection { connection in
            _ = try connection.query("UPDATE notifications SET expires_at = now() - interval '1 second' WHERE id = \(id)")
            _ = try connection.query("""
                UPDATE deliveries SET expires_at = now() - interval '1 second'
                WHERE notification_key = (SELECT key FROM notifications WHERE id = \(id))
                """)
        }
    }
}
