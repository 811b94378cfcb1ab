import Foundation
import PigeonDomain
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonStore

/// CONTRACT §10 "The bank hears at once when a notification reaches nobody", in the statements
/// that make a delivery final: the report is queued with the state, once, and not again at the
/// timeout.
@Suite("Reached nobody: the bank told at once (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct ReachedNobodyTests {
    let identifiers = UserIdentifiers(caseInsensitive: false)

    /// Sends `id` to `users`; those in `subscribed` have an iPhone.
    func send(_ pool: PostgresPool, id: String, users: [String], subscribed: Set<String>, timeoutSeconds: Int = 600) async throws -> SendOutcome {
        let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
        for user in users where subscribed.contains(user) {
            try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "d-\(user)", platform: .ios, pushToken: "ab\(user.count)")
        }
        return try await NotificationStore(pool: pool, identifiers: identifiers).send(PushNotification(
            id: id, recipients: users, timeoutSeconds: timeoutSeconds, pushContent: PushContent(text: "code", type: .pinCode), priority: 10))
    }

    /// The outbox's reports, oldest first.
    func reports(_ pool: PostgresPool) async throws -> [BankReport] {
        try await pool.withConnection { connection in
            try connection.query(sql: "SELECT kind, payload::text AS payload FROM outbox ORDER BY id").decoded { row in
                BankReport(kind: try row.decode("kind"), payload: try row.decode("payload"))
            }
        }.compactMap { $0 }
    }

    /// Moves notification `id`'s timeout into the past (instead of waiting for it).
    func timeOut(_ pool: PostgresPool, id: String) async throws {
        _ = try await pool.withConnection { connection in
            try connection.query(sql: "UPDATE deliveries SET expires_at = now() - interval '1 second' WHERE notification_key = (SELECT key FROM notifications WHERE id = $1)", [id])
            try connection.query(sql: "UPDATE notifications SET expires_at = now() - interval '1 second' WHERE id = $1", [id])
        }
    }

    @Test("outcomes that reach nobody within the timeout are reported with their state, one report per notification in the order sent; a retry, a push accepted and a late outcome are not")
    func outcomes() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let users = ["dead", "failed", "retried", "reached", "also-dead"]
        _ = try await send(pool, id: "code-1", users: users, subscribed: Set(users))
        _ = try await send(pool, id: "late", users: ["late-user"], subscribed: ["late-user"])
        let queue = DeliveryQueue(pool: pool)
        let claimed = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60))
        #expect(claimed.count == 6)
        try await timeOut(pool, id: "late")
        let state: [String: DeliveryState] = ["dead": .invalidSubscription, "failed": .sendingFailed, "retried": .queued,
                                              "reached": .sent, "also-dead": .invalidSubscription, "late-user": .sendingFailed]
        let results = claimed.map { delivery in
            DeliveryResult(delivery: delivery, state: state[delivery.userId]!,
                           nextAttemptAt: delivery.userId == "retried" ? Date().addingTimeInterval(30) : nil)
        }
        #expect(try await queue.record(results, owner: "w") == 6)
        #expect(try await reports(pool) == [.notificationExpired(notificationId: "code-1", users: ["dead", "failed", "also-dead"], reason: .reachedNobody)])
        // At the timeout only what was not told yet: the retried one, the one pushed but never
        // acknowledged, and the failure written after the timeout.
        try await timeOut(pool, id: "code-1")
        _ = try await pool.withConnection { try $0.query(sql: "DELETE FROM outbox") }
        let step = try await Sweeps(pool: pool).expire()
        #expect(step.reports == 2)
        let atTimeout = try await reports(pool)
        #expect(atTimeout.contains(.notificationExpired(notificationId: "code-1", users: ["retried", "reached"], reason: .timeout)))
        #expect(atTimeout.contains(.notificationExpired(notificationId: "late", users: ["late-user"], reason: .timeout)))
        // Both notifications are done: a second sweep finds nothing, and the early failure stays SENDING_FAILED.
        #expect(try await Sweeps(pool: pool).expire().reports == 0)
        let failed = try await pool.withConnection {
            try $0.query(sql: "SELECT state FROM deliveries WHERE user_id = 'failed'").scalar
        }
        #expect(failed == "SENDING_FAILED")
        await drop()
    }

    @Test("a send's recipients without a device are reported in the send's transaction, a blast's in reports of at most 10,000 users; a repeated send reports nothing more")
    func atSend() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let outcome = try await send(pool, id: "code-2", users: ["nobody", "somebody", "nobody-else"], subscribed: ["somebody"])
        guard case .stored(let states, _) = outcome else { Issue.record("not stored: \(outcome)"); return }
        #expect(states.map(\.state) == [.invalidSubscription, .queued, .invalidSubscription])
        #expect(try await reports(pool) == [.notificationExpired(notificationId: "code-2", users: ["nobody", "nobody-else"], reason: .reachedNobody)])
        _ = try await send(pool, id: "code-2", users: ["nobody", "somebody", "nobody-else"], subscribed: [])
        #expect(try await reports(pool).count == 1)
        // A blast to 10,001 users without the app.
        _ = try await pool.withConnection { try $0.query(sql: "DELETE FROM outbox") }
        let many = (1...10_001).map { "u\($0)" }
        _ = try await send(pool, id: "blast", users: many, subscribed: [])
        let blast = try await reports(pool)
        #expect(blast.map(\.concerned.count).sorted() == [1, 10_000])
        #expect(blast.flatMap(\.concerned).sorted() == many.sorted())
        // Their deliveries are final and told: the timeout reports none of them again.
        try await timeOut(pool, id: "blast")
        try await timeOut(pool, id: "code-2")
        _ = try await pool.withConnection { try $0.query(sql: "DELETE FROM outbox") }
        _ = try await Sweeps(pool: pool).expire()
        #expect(try await reports(pool) == [.notificationExpired(notificationId: "code-2", users: ["somebody"], reason: .timeout)])
        await drop()
    }

    @Test("a report reaching nobody keeps its reason through the outbox row; one written before reasons reads as a timeout")
    func payload() {
        let early = BankReport.notificationExpired(notificationId: "n", users: ["a"], reason: .reachedNobody)
        #expect(BankReport(kind: early.kind, payload: early.payload) == early)
        #expect(BankReport(kind: "reportNotificationExpired", payload: #"{"notificationId":"n","users":["a"]}"#)
            == .notificationExpired(notificationId: "n", users: ["a"], reason: .timeout))
        #expect(BankReport(kind: "reportNotificationExpired", payload: #"{"notificationId":"n","users":["a"],"reason":"moon"}"#) == nil)
        #expect(early.label == "reportNotificationExpired (reached nobody)")
    }
}
