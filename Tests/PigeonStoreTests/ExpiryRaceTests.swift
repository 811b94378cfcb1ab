import Foundation
import PigeonDomain
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonStore

/// The expiry step against the engine writing outcomes into the same deliveries at the same time.
@Suite("Expiry racing the engine (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct ExpiryRaceTests {
    @Test("deliveries the engine changes while the expiry step waits for their locks are expired and reported, not left SENT with the notification marked done")
    func deliveriesChangedWhileLockedAreExpired() async throws {
        let (pool, url, drop) = try await TestDatabase.isolatedDatabaseWithURL()
        defer { Task { await drop() } }
        try await pool.withConnection { connection in
            try connection.query(sql: """
                INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
                VALUES ('bank', 'alice', 'alice', 'phone', 'IOS', repeat('a', 64)), ('bank', 'bob', 'bob', 'phone', 'IOS', repeat('b', 64))
                """)
        }
        // Sent an hour ago with a minute to live: overdue, both deliveries pushed (SENT). In the
        // first hour of a UTC day that is yesterday, whose partition the migrations do not make
        // (the gateway's start does, as here).
        _ = try await Retention(pool: pool).prepareDays(around: Date())
        let store = NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false), now: { Date().addingTimeInterval(-3600) })
        _ = try await store.send(PushNotification(id: "race", recipients: ["alice", "bob"], timeoutSeconds: 60,
                                                  pushContent: PushContent(text: "Code 1234", type: .pinCode)))
        try await pool.withConnection { connection in
            try connection.query(sql: "UPDATE deliveries SET state = 'SENT', next_attempt_at = NULL")
        }
        // The engine writing outcomes: new versions of both rows, locked until it commits.
        let engine = try PostgresConnection(settings: PostgresConnectionSettings(url: url))
        try engine.query(sql: "BEGIN")
        try engine.query(sql: "UPDATE deliveries SET updated_at = now(), last_error = 'written by the engine'")
        let step = Task { try await Sweeps(pool: pool).expireNewestFirst() }
        // The step has taken its snapshot and waits for the engine's row locks.
        var waiting = false
        for _ in 0..<600 where !waiting {
            // Asked on another connection: a session in a transaction sees pg_stat_activity
            // as it was when the transaction first read it.
            waiting = try await pool.withConnection { connection in
                try connection.query(sql: """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%SET state = ''EXPIRED''%'
                    """).scalar == "1"
            }
            if !waiting { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(waiting, "the expiry step never waited for the engine's locks")
        try engine.query(sql: "COMMIT")
        let result = try await step.value
        #expect(result.reports == 1 && result.rows == 2, "step: \(result)")

        let (states, handled, reports) = try await pool.withConnection { connection in
            (try connection.query(sql: "SELECT state FROM deliveries ORDER BY position").rows.compactMap { $0.text(0) },
             try connection.query(sql: "SELECT expiry_handled FROM notifications WHERE id = 'race'").scalar,
             try connection.query(sql: "SELECT payload::text FROM outbox WHERE kind = 'reportNotificationExpired'").rows.compactMap { $0.text(0) })
        }
        #expect(states == ["EXPIRED", "EXPIRED"])
        #expect(handled == "t")
        #expect(reports.count == 1 && reports.allSatisfy { $0.contains("\"alice\"") && $0.contains("\"bob\"") }, "reports: \(reports)")
    }
}
