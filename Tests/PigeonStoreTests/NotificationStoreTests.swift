import Foundation
import PostgresDriver
import Synchronization
import PigeonCore
import PigeonDomain
import PigeonTestSupport
import Testing
@testable import PigeonStore

@Suite("Notification store (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct NotificationStoreTests {
    func notification(_ id: String, _ recipients: [String], details: [KeyValue]? = nil) -> PushNotification {
        PushNotification(
            id: id, recipients: recipients, timeoutSeconds: 60,
            pushContent: PushContent(badge: 1, sound: "default", text: "Code 1234", type: .pinCode, details: [KeyValue("target", "1234")]),
            details: details, perishable: true, priority: 3)
    }

    @Test("users with a subscribed device are QUEUED, others INVALID_SUBSCRIPTION, in order")
    func sendStates() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        let identifiers = UserIdentifiers(caseInsensitive: false)
        let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
        let store = NotificationStore(pool: pool, identifiers: identifiers)
        let alice = TestDatabase.unique("alice"), bob = TestDatabase.unique("bob")
        try await subscriptions.subscribe(bankClientId: "bank", userId: alice, deviceId: "d1", platform: .ios, pushToken: "aa")

        let id = TestDatabase.unique("n")
        let outcome = try await store.send(notification(id, [bob, alice, bob]))
        #expect(outcome.stored == ([RecipientState(user: bob, state: .invalidSubscription), RecipientState(user: alice, state: .queued)]))
        #expect(try await store.deliveryStatus(id: id) == [RecipientState(user: bob, state: .invalidSubscription), RecipientState(user: alice, state: .queued)])
    }

    @Test("a stored send's deadline is the stored expires_at exactly, to the bit: the expiry watcher takes the two for one")
    func deadlineAsStored() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        let identifiers = UserIdentifiers(caseInsensitive: false)
        // A moment (today: the partitions kept) whose fractional seconds have no exact binary form.
        let second = Date().timeIntervalSince1970.rounded(.down)
        let moment = Date(timeIntervalSince1970: second + 0.123_456_7)
        let store = NotificationStore(pool: pool, identifiers: identifiers, now: { moment })
        let id = TestDatabase.unique("deadline")
        guard case .stored(_, let expiresAt) = try await store.send(notification(id, [TestDatabase.unique("nobody")])) else {
            Issue.record("not stored"); return
        }
        let stored = try await pool.withConnection { connection in
            try connection.query(sql: "SELECT extract(epoch FROM expires_at)::double precision AS e FROM notifications WHERE id = $1", [id])
                .decodedFirst { try $0.decode("e", as: Date.self) }
        }
        #expect(stored == expiresAt)
        #expect(expiresAt == Date(timeIntervalSince1970: (second * 1000 + 60_123) / 1000))
    }

    @Test("the engine's batch look-up: every stored notification of the keys at once, each as sent; a key that is gone is missing")
    func notificationsByKeys() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        let store = NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let first = TestDatabase.unique("n"), second = TestDatabase.unique("n")
        _ = try await store.send(notification(first, ["u"]))
        _ = try await store.send(notification(second, ["u"], details: [KeyValue("name", "Coffee")]))
        let keys = try await pool.withConnection { connection in
            try [first, second].map { try NotificationStore.key(of: $0, connection)! }
        }
        let found = try await store.notifications(keys: keys + [keys.max()! + 1_000_000])
        #expect(found.count == 2)
        #expect(found[keys[0]]?.id == first && found[keys[1]]?.id == second)
        #expect(found[keys[1]] == (try await store.notification(key: keys[1])))
        #expect(found[keys[1]]?.details == [KeyValue("name", "Coffee")] && found[keys[1]]?.priority == 3)
        #expect(try await store.notifications(keys: []).isEmpty)
    }

    @Test("a repeated id stores nothing and answers the first send's states")
    func duplicate() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        let store = NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let id = TestDatabase.unique("dup")
        let first = try await store.send(notification(id, ["u1", "u2"]))
        guard case .stored(let states, _) = first else { Issue.record("first send not stored"); return }
        let second = try await store.send(notification(id, ["u3"]))
        #expect(second == .duplicate(states))
        let rows = try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM deliveries WHERE notification_key = (SELECT key FROM notifications WHERE id = $1)", [id]).scalar }
        #expect(rows == "2")
    }

    @Test("concurrent sends of one id store it exactly once")
    func concurrentDuplicates() async throws {
        let pool = try await TestDatabase.migratedPool(size: 8)
        defer { pool.close() }
        let store = NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let id = TestDatabase.unique("race")
        let message = notification(id, ["u1"])
        let outcomes = try await withThrowingTaskGroup(of: SendOutcome.self) { group in
            for _ in 0..<16 { group.addTask { try await store.send(message) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { if case .stored = $0 { true } else { false } }.count == 1)
        #expect(outcomes.filter { if case .duplicate = $0 { true } else { false } }.count == 15)
    }

    @Test("concurrent sends share commits yet each gets its own, correct states")
    func groupCommit() async throws {
        let pool = try await TestDatabase.migratedPool(size: 4)
        defer { pool.close() }
        let identifiers = UserIdentifiers(caseInsensitive: false)
        let store = NotificationStore(pool: pool, identifiers: identifiers)
        let subscribed = TestDatabase.unique("subscribed")
        try await SubscriptionStore(pool: pool, identifiers: identifiers).subscribe(bankClientId: "bank", userId: subscribed, deviceId: "d", platform: .ios, pushToken: "ab")
        let prefix = TestDatabase.unique("batch")
        let outcomes = try await withThrowingTaskGroup(of: (Int, SendOutcome).self) { group in
            for index in 0..<200 {
                group.addTask {
                    let others = (0..<(index % 5)).map { "\(prefix)-nobody-\(index)-\($0)" }
                    let message = notification("\(prefix)-\(index)", index % 2 == 0 ? [subscribed] + others : others + [subscribed])
                    return (index, try await store.send(message))
                }
            }
            return try await group.reduce(into: [Int: SendOutcome]()) { $0[$1.0] = $1.1 }
        }
        #expect(outcomes.count == 200)
        for (index, outcome) in outcomes {
            let others = (0..<(index % 5)).map { RecipientState(user: "\(prefix)-nobody-\(index)-\($0)", state: .invalidSubscription) }
            let mine = RecipientState(user: subscribed, state: .queued)
            #expect(outcome.stored == (index % 2 == 0 ? [mine] + others : others + [mine]), "send \(index)")
        }
    }

    @Test("getNotificationDetails returns exactly what was sent, absent fields absent")
    func roundTrip() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        let store = NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let full = notification(TestDatabase.unique("full"), ["a", "b"], details: [KeyValue("name", "Заголовок"), KeyValue("x", "{\"quoted\"}"), KeyValue("x", "")])
        _ = try await store.send(full)
        #expect(try await store.notification(id: full.id) == full)
        // The engine's and the device API's read leaves the recipient list behind, nothing else.
        var contentOnly = full
        contentOnly.recipients = []
        #expect(try await store.notification(id: full.id, recipients: false) == contentOnly)

        var sparse = PushNotification(id: TestDatabase.unique("sparse"), recipients: ["a"], timeoutSeconds: 5, pushContent: PushContent(text: "t", type: .universal))
        _ = try await store.send(sparse)
        #expect(try await store.notification(id: sparse.id) == sparse)
        sparse.id = TestDatabase.unique("empty-details")
        sparse.details = []
        _ = try await store.send(sparse)
        #expect(try await store.notification(id: sparse.id)?.details == [])
        #expect(try await store.notification(id: "no-such-id") == nil)
        #expect(try await store.deliveryStatus(id: "no-such-id") == nil)
    }

    @Test("caseInsensitiveIds matches devices and folds repeated recipients")
    func caseInsensitive() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        let user = TestDatabase.unique("Carol").uppercased()
        let insensitive = UserIdentifiers(caseInsensitive: true)
        try await SubscriptionStore(pool: pool, identifiers: insensitive).subscribe(bankClientId: "bank", userId: user, deviceId: "d", platform: .android, pushToken: "t")
        let lower = user.lowercased()

        let folded = try await NotificationStore(pool: pool, identifiers: insensitive).send(notification(TestDatabase.unique("ci"), [lower, user]))
        #expect(folded.stored == ([RecipientState(user: lower, state: .queued)]))
        let exact = try await NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false)).send(notification(TestDatabase.unique("cs"), [lower]))
        #expect(exact.stored == ([RecipientState(user: lower, state: .invalidSubscription)]))
        #expect(try await SubscriptionStore(pool: pool, identifiers: insensitive).exist(users: [lower]) == [true])
        #expect(try await SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false)).exist(users: [lower]) == [false])
    }

    @Test("10,000 recipients are stored in one send")
    func largeFanOut() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        let store = NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let recipients = (0..<10_000).map { "bulk-user-\($0)" }
        let outcome = try await store.send(notification(TestDatabase.unique("bulk"), recipients))
        guard case .stored(let states, _) = outcome else { Issue.record("not stored"); return }
        #expect(states.count == 10_000)
        #expect(states.map(\.user) == recipients)
    }
}

@Suite("Subscription store (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct SubscriptionStoreTests {
    @Test("exist answers per user in order; deleteAll erases every device of the user")
    func existAndDelete() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        let store = SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let dave = TestDatabase.unique("dave"), erin = TestDatabase.unique("erin")
        try await store.subscribe(bankClientId: "bank", userId: dave, deviceId: "phone", platform: .ios, pushToken: "a1")
        try await store.subscribe(bankClientId: "bank", userId: dave, deviceId: "tablet", platform: .android, pushToken: "b2")
        try await store.subscribe(bankClientId: "bank", userId: dave, deviceId: "phone", platform: .ios, pushToken: "a3")
        #expect(try await store.devices(user: dave).map(\.pushToken) == ["a3", "b2"])
        #expect(try await store.exist(users: [erin, dave, erin]) == [false, true, false])
        #expect(try await store.deleteAll(user: dave) == 2)
        #expect(try await store.exist(users: [dave]) == [false])
        #expect(try await store.deleteAll(user: dave) == 0)
    }
}

@Suite("PostgreSQL pool and migrations", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct PostgresPoolTests {
    @Test("migrations are recorded and not applied twice")
    func migrationsIdempotent() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        let migrator = Migrator(migrations: try Migration.load(from: TestDatabase.migrationsDirectory))
        let report = try await migrator.migrate(pool, logger: .silent)
        #expect(report.applied.isEmpty)
        #expect(report.alreadyApplied == migrator.migrations.count)
        #expect(try await migrator.pending(pool).isEmpty)
    }

    @Test("a changed applied migration is refused")
    func changedMigration() async throws {
        let pool = try await TestDatabase.migratedPool()
        defer { pool.close() }
        var migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
        migrations[0].sql += "\n-- edited"
        await #expect(throws: PostgresError.self) { try await Migrator(migrations: migrations).migrate(pool, logger: .silent) }
    }

    @Test("migrations run without the pool's statement timeout, but a lock held elsewhere fails them after lockTimeout")
    func migrationTimeouts() async throws {
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let strict = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: database.url), size: 1, statementTimeoutMilliseconds: 1000), logger: .silent)
        defer { strict.close() }
        let existing = try Migration.load(from: TestDatabase.migrationsDirectory)
        let next = (existing.last?.version ?? 0) + 1
        // Longer than the pool's statement timeout (1 s, not shorter: a loaded machine can take
        // longer than a tighter limit on the statement that lifts it): still applied.
        let slow = Migration(version: next, name: "slow", sql: "SELECT pg_sleep(1.5); CREATE TABLE slow_done (x int);")
        let report = try await Migrator(migrations: existing + [slow]).migrate(strict, logger: .silent)
        #expect(report.applied == [next])
        // The pooled connection has its statement timeout back.
        await #expect(throws: PostgresError.self) { try await strict.withConnection { try $0.query(sql: "SELECT pg_sleep(1.5)") } }
        // A table locked by a running transaction elsewhere: the migration gives up.
        let holder = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: database.url), size: 1), logger: .silent)
        defer { holder.close() }
        let locked = Task {
            try await holder.withConnection { connection in
                try connection.transaction { connection in
                    _ = try connection.query(sql: "LOCK TABLE slow_done IN ACCESS EXCLUSIVE MODE")
                    // Held until the test cancels it, however slow the machine.
                    _ = try connection.query(sql: "SELECT pg_sleep(120)")
                }
            }
        }
        // Wait until the lock is really held (asked without the strict pool's 1 s limit, which
        // a loaded machine can exceed on the catalog query itself).
        for _ in 0..<100 {
            let held = try await database.pool.withConnection { try $0.query(sql: "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'slow_done' AND l.granted").scalar }
            if held != "0" { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let blocked = Migration(version: next + 1, name: "blocked", sql: "ALTER TABLE slow_done ADD COLUMN y int;")
        do {
            _ = try await Migrator(migrations: existing + [slow, blocked], lockTimeout: .milliseconds(200)).migrate(strict, logger: .silent)
            Issue.record("the migration waited for the lock")
        } catch let error as PostgresError {
            #expect(error.sqlState == "55P03", "\(error)")
        }
        _ = try await database.pool.withConnection {
            try $0.query(sql: """
                SELECT pg_cancel_backend(l.pid) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                WHERE c.relname = 'slow_done' AND l.granted
                """)
        }
        _ = try? await locked.value
        await database.drop()
    }

    @Test("connections killed under concurrent sends: only the batches on them fail, the sends after go through on fresh connections")
    func sendsSurviveLostConnections() async throws {
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let store = NotificationStore(pool: database.pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let admin = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: try #require(TestDatabase.url)), size: 1), logger: .silent)
        defer { admin.close() }
        let location = database.url.prefix { $0 != "?" }
        let name = String(location[location.index(after: location.lastIndex(of: "/")!)...])
        let prefix = TestDatabase.unique("lost")
        let killed = ManagedAtomicFlag()
        let outcomes = try await withThrowingTaskGroup(of: [Bool].self) { group in
            for sender in 0..<8 {
                group.addTask {
                    var results: [Bool] = []
                    for index in 0..<120 {
                        if sender == 0 && index == 40 {
                            // Every backend of the gateway's database dies at once (a restart, a failover).
                            _ = try await admin.withConnection { try $0.query(sql: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]) }
                            killed.set()
                        }
                        // Every sender is at its 40th send when the connections die, however
                        // unevenly a loaded machine schedules them: 80 sends each come after.
                        while index == 40 && !killed.isSet { try await Task.sleep(for: .milliseconds(5)) }
                        do {
                            _ = try await store.send(PushNotification(id: "\(prefix)-\(sender)-\(index)", recipients: ["u\(index)"], timeoutSeconds: 60,
                                                                      pushContent: PushContent(text: "t", type: .universal)))
                            results.append(true)
                        } catch {
                            results.append(false)
                        }
                    }
                    return results
                }
            }
            return try await group.reduce(into: [[Bool]]()) { $0.append($1) }
        }
        #expect(killed.isSet)
        let failures = outcomes.flatMap { $0 }.filter { !$0 }.count
        // Each of the pool's 4 dead connections can fail the one batch (at most the 8 senders'
        // sends) it was writing when it was found dead, then it is replaced: at most 32. Before,
        // a flush kept writing batches on its dead connection while sends kept coming (64-79).
        #expect(failures <= 32, "\(failures) of \(outcomes.flatMap { $0 }.count) sends failed")
        // Whatever failed was answered; the last 20 of each sender's 80 sends after the kill went through.
        #expect(outcomes.allSatisfy { $0.suffix(20).allSatisfy { $0 } })
        let stored = try await database.pool.withConnection { try $0.query(sql: "SELECT count(*) FROM notifications").scalar.flatMap(Int.init) ?? 0 }
        #expect(stored >= 960 - failures)
        await database.drop()
    }

    @Test("errors carry the SQLSTATE; the connection stays usable")
    func sqlState() async throws {
        let pool = try await TestDatabase.migratedPool(size: 1)
        defer { pool.close() }
        do {
            _ = try await pool.withConnection { try $0.query(sql: "SELEC 1") }
            Issue.record("bad SQL succeeded")
        } catch let error as PostgresError {
            #expect(error.sqlState == "42601")
            #expect(error.code == .queryFailed)
        }
        #expect(try await pool.withConnection { try $0.query(sql: "SELECT $1::int + 1", ["41"]).scalar } == "42")
    }

    @Test("a transaction that throws leaves nothing behind")
    func rollback() async throws {
        let pool = try await TestDatabase.migratedPool(size: 1)
        defer { pool.close() }
        let id = TestDatabase.unique("rolled-back")
        await #expect(throws: PostgresError.self) {
            try await pool.transaction { connection in
                try connection.query(sql: "INSERT INTO outbox (kind, payload) VALUES ($1, '{}')", [id])
                try connection.query(sql: "SELECT 1/0")
            }
        }
        #expect(try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM outbox WHERE kind = $1", [id]).scalar } == "0")
    }

    @Test("after the server drops every connection: reads run again on fresh ones, writes fail once and the next job has a fresh connection")
    func reconnect() async throws {
        guard let url = TestDatabase.url else { return }
        let name = TestDatabase.unique("reconnect")
        let separator = url.contains("?") ? "&" : "?"
        let pool = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: url + separator + "application_name=" + name), size: 2), logger: .silent)
        defer { pool.close() }
        let killer = try await TestDatabase.migratedPool(size: 1)
        defer { killer.close() }
        // Open both pooled connections, then have the server terminate them.
        async let first: String? = pool.withConnection { try $0.query(sql: "SELECT pg_sleep(0.05)::text").scalar }
        async let second: String? = pool.withConnection { try $0.query(sql: "SELECT pg_sleep(0.05)::text").scalar }
        _ = try await (first, second)
        let terminated = try await killer.withConnection {
            try $0.query(sql: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [name])
        }
        #expect(terminated.count == 2)
        // Reads marked idempotent run again on a fresh connection.
        for _ in 0..<4 {
            #expect(try await pool.withConnection(idempotent: true) { try $0.query(sql: "SELECT 7").scalar } == "7")
        }
        // A write is not repeated behind its caller's back: the caller gets the error once, and
        // the connection is replaced for the next job.
        _ = try await killer.withConnection {
            try $0.query(sql: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [name])
        }
        var failures = 0
        for _ in 0..<4 {
            do {
                #expect(try await pool.withConnection { try $0.query(sql: "SELECT 8").scalar } == "8")
            } catch let error as PostgresError {
                #expect(error.isConnectionFailure, "\(error)")
                failures += 1
            }
        }
        #expect(failures >= 1 && failures <= 2, "each dead pooled connection fails one job at most")
    }

    @Test("jobs beyond the waiting limit fail fast with overloaded")
    func overload() async throws {
        guard let url = TestDatabase.url else { return }
        let pool = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: url), size: 1, maxWaitingJobs: 2), logger: .silent)
        defer { pool.close() }
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do {
                        _ = try await pool.withConnection { try $0.query(sql: "SELECT pg_sleep(0.2)").count }
                        return true
                    } catch {
                        return false
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.contains(false))
        #expect(results.contains(true))
    }
}


/// A flag set once from any task.
final class ManagedAtomicFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
