import Foundation
import PigeonDomain
import PigeonTestSupport
import Testing
@testable import PigeonStore

/// The console's reads (issue 11): bounded, and through indexes even when the history is large.
@Suite("Console store (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct ConsoleStoreTests {
    let identifiers = UserIdentifiers(caseInsensitive: true)

    @Test("a user's recent notifications come newest first through the index by user, not by reading a day of 100,000 deliveries")
    func recentNotificationsUseTheIndex() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "Client-1001", deviceId: "d", platform: .ios, pushToken: "ab")
        let notifications = NotificationStore(pool: pool, identifiers: identifiers)
        for index in 1...3 {
            _ = try await notifications.send(PushNotification(id: "code-\(index)", recipients: ["client-1001"], timeoutSeconds: 600,
                                                              pushContent: PushContent(text: "t", type: .pinCode)))
        }
        try await TestDatabase.load(pool, script: """
                INSERT INTO notifications (key, id, recipient_count, timeout_seconds, push_text, push_type, created_at, expires_at)
                    VALUES (pigeon_notification_key(now()), 'campaign', 100000, 7200, 't', 'PRODUCT', now(), now() + interval '2 hours');
                INSERT INTO deliveries (notification_key, position, user_id, user_folded, state, expires_at, next_attempt_at)
                    SELECT (SELECT key FROM notifications WHERE id = 'campaign'), n, 'u' || n, 'u' || n, 'SENT', now() + interval '2 hours', NULL
                    FROM generate_series(1, 100000) AS n;
                ANALYZE deliveries; ANALYZE notifications;
                """)
        let recent = try await ConsoleStore(pool: pool, identifiers: identifiers).recentNotifications(user: "CLIENT-1001", limit: 2)
        #expect(recent.map(\.notificationId) == ["code-3", "code-2"])
        #expect(recent.allSatisfy { $0.state == "QUEUED" })

        let plan = try await pool.withConnection { connection in
            try connection.query("""
                EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT)
                SELECT notification_key FROM deliveries WHERE user_folded = lower('CLIENT-1001') ORDER BY notification_key DESC LIMIT 20
                """).rows.compactMap { $0.text(0) }.joined(separator: "\n")
        }
        // Today's day holds the 100,000: read through the index (the days created ahead are empty).
        let today = try await pool.withConnection { try $0.query("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')").scalar ?? "" }
        #expect(plan.contains("using deliveries_p\(today)_user_folded_notification_key_idx"), "\(plan)")
        #expect(!plan.contains("Seq Scan on deliveries_p\(today)"), "\(plan)")
        await drop()
    }
}
