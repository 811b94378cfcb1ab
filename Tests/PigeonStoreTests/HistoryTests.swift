import Foundation
import PigeonCore
import PigeonDomain
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonStore

/// The history's life: the migration onto day partitions, retention, the claim's cost with a
/// backlog, HOT acknowledgements and big sends stored in pieces.
@Suite("History: partitions, retention, queue cost (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct HistoryTests {
    let identifiers = UserIdentifiers(caseInsensitive: false)

    func subscribe(_ pool: PostgresPool, _ users: [String]) async throws {
        let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
        for user in users {
            try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "d", platform: .ios, pushToken: "ab")
        }
    }

    func notification(_ id: String, to users: [String], priority: Int? = nil) -> PushNotification {
        PushNotification(id: id, recipients: users, timeoutSeconds: 600,
                         pushContent: PushContent(text: "t", type: .universal), priority: priority)
    }

    @Test("the migration onto day partitions keeps every notification, delivery and state of a version-4 database")
    func migrationKeepsRows() async throws {
        let database = try await TestDatabase.isolatedDatabaseWithURL(migratedThrough: 4)
        let pool = database.pool
        try await TestDatabase.load(pool, script: """
                INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
                    VALUES ('bank', 'U1', 'u1', 'd', 'IOS', 'ab');
                INSERT INTO notifications (id, recipients, timeout_seconds, push_text, push_type, created_at, expires_at, priority)
                    VALUES ('old', '{U1,U2,U3}', 600, 'code 1234', 'UNIVERSAL', now() - interval '3 days', now() - interval '3 days' + interval '600 seconds', 7),
                           ('new', '{U1}', 600, 'hello', 'UNIVERSAL', now(), now() + interval '600 seconds', NULL);
                INSERT INTO deliveries (notification_id, position, user_id, user_folded, state, priority, expires_at, created_at, attempts, next_attempt_at, lease_owner)
                    VALUES ('old', 1, 'U1', 'u1', 'READ', 7, now(), now() - interval '3 days', 1, now(), 'gone'),
                           ('old', 2, 'U2', 'u2', 'INVALID_SUBSCRIPTION', 7, now(), now() - interval '3 days', 0, now(), NULL),
                           ('old', 3, 'U3', 'u3', 'SENDING_FAILED', 7, now(), now() - interval '3 days', 3, now(), NULL),
                           ('new', 1, 'U1', 'u1', 'QUEUED', 0, now() + interval '600 seconds', now(), 2, now() - interval '1 second', 'worker');
                """)
        let migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
        let report = try await Migrator(migrations: migrations).migrate(pool, logger: .silent)
        #expect(report.applied.contains(5))

        let store = NotificationStore(pool: pool, identifiers: identifiers)
        #expect(try await store.deliveryStatus(id: "old") == [
            RecipientState(user: "U1", state: .read), RecipientState(user: "U2", state: .invalidSubscription),
            RecipientState(user: "U3", state: .sendingFailed)])
        #expect(try await store.notification(id: "old")?.recipients == ["U1", "U2", "U3"])
        #expect(try await store.notification(id: "old")?.pushContent.text == "code 1234")
        #expect(try await store.notification(id: "old")?.priority == 7)
        #expect(try await store.deliveryStatus(id: "new") == [RecipientState(user: "U1", state: .queued)])
        // Each notification sits in the partition of the day it was sent; the QUEUED delivery
        // is still in the queue (attempts kept) and the finished ones are not.
        let days = try await Retention(pool: pool).days()
        let threeDaysAgo = Self.day(Date().addingTimeInterval(-3 * 86_400))
        #expect(days.contains(threeDaysAgo))
        #expect(days.contains(Self.day(Date())))
        let claimed = try await DeliveryQueue(pool: pool).claim(owner: "w", limit: 10, lease: .seconds(60))
        #expect(claimed.map(\.attempt) == [3])
        #expect(try await store.send(notification("old", to: ["X"])) == .duplicate([
            RecipientState(user: "U1", state: .read), RecipientState(user: "U2", state: .invalidSubscription),
            RecipientState(user: "U3", state: .sendingFailed)]))
        await database.drop()
    }

    @Test("retention drops the days past retentionDays, a table per day, and keeps the current ones")
    func retentionDropsOldDays() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await subscribe(pool, ["A", "B"])
        let retention = Retention(pool: pool)
        let now = Date()
        let old = now.addingTimeInterval(-40 * 86_400), edge = now.addingTimeInterval(-29 * 86_400)
        _ = try await retention.prepareDays(around: old, daysAhead: 0)
        _ = try await retention.prepareDays(around: edge, daysAhead: 0)
        _ = try await NotificationStore(pool: pool, identifiers: identifiers, now: { old }).send(notification("forty-days", to: ["A", "B"]))
        _ = try await NotificationStore(pool: pool, identifiers: identifiers, now: { edge }).send(notification("twenty-nine-days", to: ["A"]))
        let store = NotificationStore(pool: pool, identifiers: identifiers)
        _ = try await store.send(notification("today", to: ["B"]))
        #expect(try await store.deliveryStatus(id: "forty-days")?.count == 2)

        let step = try await retention.dropDays(olderThan: 30, now: now)
        #expect(step.ran)
        // The forty-day-old day and the day before it (prepared around it) went, deliveries first.
        let oldDay = Self.day(old)
        #expect(step.dropped.contains("deliveries_p\(oldDay)"))
        #expect(step.dropped.contains("notifications_p\(oldDay)"))
        #expect(step.dropped.firstIndex(of: "deliveries_p\(oldDay)")! < step.dropped.firstIndex(of: "notifications_p\(oldDay)")!)
        #expect(!step.dropped.contains { $0.hasSuffix(Self.day(edge)) })
        #expect(try await store.deliveryStatus(id: "forty-days") == nil)
        #expect(try await store.notification(id: "forty-days") == nil)
        #expect(try await store.deliveryStatus(id: "twenty-nine-days")?.count == 1)
        #expect(try await store.deliveryStatus(id: "today")?.count == 1)
        // A second pass has nothing left to drop; an interrupted detach is finished by it.
        #expect(try await retention.dropDays(olderThan: 30, now: now).dropped.isEmpty)
        // Thirty days later, the twenty-nine-day-old day goes too.
        let later = try await retention.dropDays(olderThan: 30, now: now.addingTimeInterval(2 * 86_400))
        #expect(later.dropped.contains("notifications_p\(Self.day(edge))"))
        #expect(try await store.deliveryStatus(id: "twenty-nine-days") == nil)
        #expect(try await store.deliveryStatus(id: "today")?.count == 1)
        await drop()
    }

    @Test("a claim with 300,000 not-due high-priority rows ahead reads as little as with none")
    func claimIgnoresBacklog() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await subscribe(pool, ["due-1", "due-2"])
        let store = NotificationStore(pool: pool, identifiers: identifiers)
        _ = try await store.send(notification("due", to: ["due-1", "due-2"], priority: 1))
        let empty = try await claimBlocks(pool)
        // An outage: 300,000 priority-10 deliveries wait for their retry, an hour away.
        try await TestDatabase.load(pool, script: """
                INSERT INTO notifications (key, id, recipient_count, timeout_seconds, push_text, push_type, created_at, expires_at, priority)
                    VALUES (pigeon_notification_key(now()), 'outage', 300000, 7200, 't', 'UNIVERSAL', now(), now() + interval '2 hours', 10);
                INSERT INTO deliveries (notification_key, position, user_id, user_folded, state, priority, expires_at, next_attempt_at)
                    SELECT (SELECT key FROM notifications WHERE id = 'outage'), n, 'u' || n, 'u' || n, 'QUEUED', 10,
                           now() + interval '2 hours', now() + interval '1 hour'
                    FROM generate_series(1, 300000) AS n;
                ANALYZE deliveries;
                """)
        let backlog = try await claimBlocks(pool)
        // Walking the backlog would read its ~800 index pages at least.
        #expect(backlog <= empty + 60, "claim read \(backlog) blocks with the backlog, \(empty) without")
        let claimed = try await DeliveryQueue(pool: pool).claim(owner: "w", limit: 10, lease: .seconds(60))
        #expect(claimed.map(\.userId).sorted() == ["due-1", "due-2"])
        await drop()
    }

    @Test("a claim reads only the days that can still hold a claimable delivery, not every day kept")
    func claimReadsLiveDays() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await subscribe(pool, ["A", "B"])
        // A month of days (about a hundred tables and their indexes) is a fixture: made without the
        // pool's statement timeout, which CI's full run, all suites starting at once, outlasted.
        try await TestDatabase.load(pool, script: "SELECT pigeon_create_days(pigeon_day(now()) - 30, pigeon_day(now()) + 3)")
        let now = Date()
        // Twenty days ago a send with a month to live, still QUEUED; twenty-five days ago one
        // that expired long since (not swept yet): only the first can be claimed.
        let living = PushNotification(id: "twenty-days", recipients: ["A"], timeoutSeconds: 30 * 86_400,
                                      pushContent: PushContent(text: "t", type: .universal))
        _ = try await NotificationStore(pool: pool, identifiers: identifiers, now: { now.addingTimeInterval(-20 * 86_400) }).send(living)
        _ = try await NotificationStore(pool: pool, identifiers: identifiers, now: { now.addingTimeInterval(-25 * 86_400) })
            .send(notification("twenty-five-days", to: ["B"]))
        let dayKey = { (age: Double) in Int64(floor((now.timeIntervalSince1970 - age * 86_400) / 86_400)) << 40 }
        #expect(try await pool.withConnection { try LiveDays.lookUp($0) } == dayKey(20))

        let queue = DeliveryQueue(pool: pool)
        let claimed = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60))
        #expect(claimed.map(\.userId) == ["A"])
        try await queue.record(claimed.map { DeliveryResult(delivery: $0, state: .sent) }, owner: "w")
        // Drained: from now on claims start at yesterday, whatever is kept before it.
        let firstKey = try await pool.withConnection { try LiveDays.lookUp($0) }
        #expect(firstKey == dayKey(1))
        let bounded = try await deliveryPartitions(pool, DeliveryQueue.claimStatement(firstKey: firstKey), ["w", "60", "{0}", "500"])
        let unbounded = try await deliveryPartitions(pool, DeliveryQueue.claimStatement(firstKey: 0), ["w", "60", "{0}", "500"])
        #expect(bounded.count <= 3, "the claim reads \(bounded.sorted())")
        #expect(unbounded.count >= 30)
        await drop()
    }

    /// The partitions of `deliveries` that `statement`'s plan reads, after pruning.
    func deliveryPartitions(_ pool: PostgresPool, _ statement: String, _ parameters: [String?] = []) async throws -> Set<String> {
        let plan = try await pool.withConnection { try $0.query(sql: "EXPLAIN (FORMAT JSON) " + statement, parameters).scalar ?? "[]" }
        var names = Set<String>()
        func collect(_ node: Any) {
            if let object = node as? [String: Any] {
                if let name = object["Relation Name"] as? String, name.hasPrefix("deliveries_p") { names.insert(name) }
                object.values.forEach(collect)
            } else if let array = node as? [Any] {
                array.forEach(collect)
            }
        }
        collect(try JSONSerialization.jsonObject(with: Data(plan.utf8)))
        return names
    }

    /// Shared blocks the claim's search for due rows reads (hit or read), run and rolled back.
    func claimBlocks(_ pool: PostgresPool) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query(sql: "BEGIN")
            defer { _ = try? connection.query(sql: "ROLLBACK") }
            // The priorities a claim's turns found: the backlog's and the due rows'.
            let plan = try connection.query(sql: "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + DeliveryQueue.claimStatement(firstKey: 0),
                                            ["w", "60", "{10,1}", "500"])
            let json = try JSONSerialization.jsonObject(with: Data((plan.scalar ?? "[]").utf8)) as? [[String: Any]]
            let top = json?.first?["Plan"] as? [String: Any]
            return ((top?["Shared Hit Blocks"] as? Int) ?? 0) + ((top?["Shared Read Blocks"] as? Int) ?? 0)
        }
    }

    @Test("acknowledgements of a SENT delivery are HOT updates: the state is in no index")
    func acknowledgementsAreHOT() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let users = (1...20).map { "hot-\($0)" }
        try await subscribe(pool, users)
        let store = NotificationStore(pool: pool, identifiers: identifiers)
        _ = try await store.send(notification("hot", to: users))
        let queue = DeliveryQueue(pool: pool)
        let claimed = try await queue.claim(owner: "w", limit: 100, lease: .seconds(60))
        try await queue.record(claimed.map { DeliveryResult(delivery: $0, state: .sent) }, owner: "w")
        let device = try await SubscriptionStore(pool: pool, identifiers: identifiers).devices(user: "hot-1").first?.id ?? 0
        // The result moved each row out of the queue index (20 updates, not HOT; the claim wrote
        // its lease row, not the deliveries); vacuum clears their old versions so the page has
        // room for the next ones.
        let partition = "deliveries_p\(Self.day(Date()))"
        let before = try await updateCounts(pool, partition, atLeast: 20)
        _ = try await pool.withConnection { try $0.query(sql: "VACUUM \(partition)") }
        let acknowledgements = AcknowledgementStore(pool: pool, identifiers: identifiers)
        for user in users {
            #expect(try await acknowledgements.acknowledge(notificationId: "hot", user: user, device: device, target: .delivered) == .recorded(.delivered))
            #expect(try await acknowledgements.acknowledge(notificationId: "hot", user: user, device: device, target: .read) == .recorded(.read))
        }
        let after = try await updateCounts(pool, partition, atLeast: before.updates + 40)
        #expect(after.updates - before.updates == 40)
        #expect(after.hot - before.hot == 40, "\(after.hot - before.hot) of 40 acknowledgements were HOT")
        await drop()
    }

    @Test("a send bigger than one statement is stored in pieces in one transaction, every recipient in order")
    func bigSendInPieces() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let users = (1...2_500).map { "big-\($0)" }
        try await subscribe(pool, Array(users.prefix(10)))
        var limits = SendBatcher.Limits()
        limits.recipientsPerStatement = 1_000
        let store = NotificationStore(pool: pool, identifiers: identifiers, limits: limits)
        guard case .stored(let states, _) = try await store.send(notification("big", to: users + ["big-1"])) else {
            Issue.record("not stored")
            await drop()
            return
        }
        #expect(states.map(\.user) == users)
        #expect(states.prefix(10).allSatisfy { $0.state == .queued })
        #expect(states.dropFirst(10).allSatisfy { $0.state == .invalidSubscription })
        #expect(try await store.deliveryStatus(id: "big") == states)
        #expect(try await store.notification(id: "big")?.recipients == users)
        // A piece failing (statement timeout) leaves nothing of the send behind.
        limits.bigSendTimeLimit = .zero
        let slow = NotificationStore(pool: pool, identifiers: identifiers, limits: limits)
        await #expect(throws: PostgresError.self) { try await slow.send(notification("too-slow", to: users)) }
        #expect(try await store.deliveryStatus(id: "too-slow") == nil)
        let rows = try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM deliveries").scalar.flatMap(Int.init) }
        #expect(rows == 2_500)
        await drop()
    }

    /// The partition's update counters once at least `atLeast` updates are counted (statistics
    /// reach the view shortly after each session goes idle).
    func updateCounts(_ pool: PostgresPool, _ table: String, atLeast: Int) async throws -> (updates: Int, hot: Int) {
        for _ in 0..<600 {
            let counts = try await pool.withConnection { connection in
                let row = try connection.query(sql: "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1", [table]).rows.first
                return (updates: row?.integer(0) ?? 0, hot: row?.integer(1) ?? 0)
            }
            if counts.updates >= atLeast { return counts }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw PostgresError(.unexpectedResult, "statistics never counted \(atLeast) updates of \(table)")
    }

    static func day(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d%02d%02d", parts.year!, parts.month!, parts.day!)
    }
}
