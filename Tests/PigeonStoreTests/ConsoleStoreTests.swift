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
            try connection.query(sql: """
                EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT)
                SELECT notification_key FROM deliveries WHERE user_folded = lower('CLIENT-1001') ORDER BY notification_key DESC LIMIT 20
                """).rows.compactMap { $0.text(0) }.joined(separator: "\n")
        }
        // Today's day holds the 100,000: read through the index (the days created ahead are empty).
        let today = try await pool.withConnection { try $0.query(sql: "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')").scalar ?? "" }
        #expect(plan.contains("using deliveries_p\(today)_user_folded_notification_key_idx"), "\(plan)")
        #expect(!plan.contains("Seq Scan on deliveries_p\(today)"), "\(plan)")
        await drop()
    }

    @Test("every console read decodes real rows by name: a page of recipients with their devices' pushes, a user's devices, waiting registrations, recent notifications, a revoke and the removed device, the waiting reports — one of a kind this version does not know listed as unreadable, not hidden")
    func everyReadDecodes() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = ConsoleStore(pool: pool, identifiers: identifiers)
        let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
        let device = try await subscriptions.subscribe(bankClientId: "bank", userId: "alice", deviceId: "phone-1", platform: .ios,
                                                       pushToken: String(repeating: "ab", count: 32),
                                                       encryptionKey: DeviceEncryptionKey(keyId: "key-7", publicKey: Data(repeating: 4, count: 65)))
        try await DeviceRegistry(pool: pool, identifiers: identifiers).savePending(
            DeviceIdentity(bankClientId: "bank", userId: "alice", deviceId: "phone-2", platform: .android), pushToken: "fcm-token",
            registrationDigest: Data(repeating: 9, count: 32))
        _ = try await NotificationStore(pool: pool, identifiers: identifiers).send(PushNotification(
            id: "n-1", recipients: ["alice", "bob"], timeoutSeconds: 600, pushContent: PushContent(text: "t", type: .pinCode)))
        try await TestDatabase.load(pool, script: """
            INSERT INTO device_pushes (notification_key, position, device_row_id, device_id, platform, app_id, token_masked, state,
                                       last_error, service_id, sent_at, updated_at)
                SELECT n.key, d.position, \(device), 'phone-1', 'IOS', '', 'abab…abab', 'SENT', NULL, 'apns-id-1', now(), now()
                FROM notifications n JOIN deliveries d ON d.notification_key = n.key AND d.user_id = 'alice' WHERE n.id = 'n-1';
            INSERT INTO outbox (kind, payload) VALUES
                ('pushIsOpened', '{"notificationId": "n-1", "users": ["alice"]}'),
                ('reportFromTheFuture', '{"whatever": true}');
            """)

        let recipients = try #require(try await store.recipients(notificationId: "n-1", offset: 0, limit: 50))
        #expect(recipients.total == 2 && recipients.page.map(\.user) == ["alice", "bob"])
        #expect(recipients.page.map(\.state) == ["QUEUED", "INVALID_SUBSCRIPTION"])
        #expect(recipients.page[0].devices.map(\.serviceId) == ["apns-id-1"] && recipients.page[0].devices.first?.sentAt != nil)
        #expect(recipients.page[1].devices.isEmpty)
        #expect(recipients.page[0].reportedEarlyAt == nil && recipients.page[1].reportedEarlyAt != nil)
        #expect(try await store.recipients(notificationId: "missing", offset: 0, limit: 50) == nil)

        let devices = try await store.devices(user: "ALICE")
        #expect(devices.map(\.deviceId) == ["phone-1"] && devices.first?.encryptionKeyId == "key-7" && devices.first?.reachedAt == nil)
        #expect(try await store.pendingRegistrations(user: "alice").map(\.deviceId) == ["phone-2"])
        #expect(try await store.recentNotifications(user: "alice").map(\.notificationId) == ["n-1"])

        // Two operators revoking the same device at once: one revokes it, the others find it gone.
        let revokes = try await withThrowingTaskGroup(of: (user: String, device: ConsoleStore.DeviceSummary)?.self) { group in
            for _ in 0..<8 { group.addTask { try await store.revoke(deviceId: device, reason: "stolen") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let revoked = try #require(revokes.compactMap { $0 }.first)
        #expect(revokes.compactMap { $0 }.count == 1)
        #expect(revoked.user == "alice" && revoked.device.deviceId == "phone-1")
        #expect(try await store.revoke(deviceId: device, reason: "again") == nil)
        #expect(try await store.removedDevices(user: "alice").map(\.reason) == ["stolen"])

        let waiting = try await store.waitingReports(offset: 0, limit: 50)
        // Bob has no device: the send reported him at once (CONTRACT §10), labelled so.
        #expect(waiting.total == 3 && waiting.page.count == 3, "\(waiting)")
        #expect(waiting.page.map(\.subject) == ["n-1", "n-1", "(unreadable report)"])
        #expect(waiting.page.map(\.kind) == ["reportNotificationExpired (reached nobody)", "pushIsOpened", "reportFromTheFuture"])
        await drop()
    }
}
