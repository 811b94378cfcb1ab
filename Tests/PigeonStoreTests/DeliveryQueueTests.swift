import Foundation
import PigeonDomain
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonStore

@Suite("Delivery queue (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct DeliveryQueueTests {
    /// A notification to `count` subscribed users.
    func enqueue(_ pool: PostgresPool, id: String, count: Int, priority: Int? = nil) async throws {
        let identifiers = UserIdentifiers(caseInsensitive: false)
        let users = (0..<count).map { "\(id)-user-\($0)" }
        let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
        for user in users {
            try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "d", platform: .ios, pushToken: "ab")
        }
        _ = try await NotificationStore(pool: pool, identifiers: identifiers).send(PushNotification(
            id: id, recipients: users, timeoutSeconds: 600, pushContent: PushContent(text: "t", type: .universal), priority: priority))
    }

    /// The notification ids of `claims`, in order.
    func ids(_ pool: PostgresPool, _ claims: [ClaimedDelivery]) async throws -> [String] {
        var ids: [String] = []
        for claim in claims {
            ids.append(try await NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
                .notification(key: claim.notificationKey)?.id ?? "?")
        }
        return ids
    }

    @Test("two workers claiming at once get disjoint sets that cover everything")
    func disjointClaims() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "fan", count: 300)
        let queue = DeliveryQueue(pool: pool)
        async let first = queue.claim(owner: "a", limit: 200, lease: .seconds(60))
        async let second = queue.claim(owner: "b", limit: 200, lease: .seconds(60))
        let (a, b) = try await (first, second)
        let keysA = Set(a.map(\.position)), keysB = Set(b.map(\.position))
        #expect(keysA.isDisjoint(with: keysB))
        #expect(keysA.union(keysB).count == 300)
        #expect(try await queue.claim(owner: "c", limit: 10, lease: .seconds(60)).isEmpty)
        await drop()
    }

    @Test("a delivery whose notification timed out is never claimed, however due; the sweep expires and reports it")
    func staleNeverClaimed() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "pin", count: 3, priority: 10)
        try await enqueue(pool, id: "fresh", count: 1)
        // A backlog held the PIN codes past their time (an APNs outage, say).
        _ = try await pool.withConnection { connection in
            try connection.query(sql: "UPDATE deliveries SET expires_at = now() - interval '1 second' WHERE notification_key = (SELECT key FROM notifications WHERE id = 'pin')")
            try connection.query(sql: "UPDATE notifications SET expires_at = now() - interval '1 second' WHERE id = 'pin'")
        }
        let queue = DeliveryQueue(pool: pool)
        let claimed = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60))
        #expect(try await ids(pool, claimed) == ["fresh"])
        let step = try await Sweeps(pool: pool).expire()
        #expect(step.rows == 3)
        #expect(step.reports == 1)
        let states = try await pool.withConnection { try $0.query(sql: "SELECT DISTINCT state FROM deliveries WHERE notification_key = (SELECT key FROM notifications WHERE id = 'pin')").rows.compactMap { $0[0] } }
        #expect(states == ["EXPIRED"])
        #expect(try await queue.claim(owner: "w", limit: 10, lease: .seconds(60)).isEmpty)
        await drop()
    }

    @Test("higher priority is claimed first")
    func priority() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "low", count: 3, priority: 1)
        try await enqueue(pool, id: "high", count: 2, priority: 9)
        let claimed = try await DeliveryQueue(pool: pool).claim(owner: "w", limit: 2, lease: .seconds(60))
        #expect(try await ids(pool, claimed) == ["high", "high"])
        await drop()
    }

    @Test("a band claims only its priorities: the urgent lane's codes, the other lane's blast; each claim carries its priority")
    func priorityBands() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "blast", count: 5)
        try await enqueue(pool, id: "code", count: 1, priority: 10)
        try await enqueue(pool, id: "alert", count: 1, priority: 20)
        let queue = DeliveryQueue(pool: pool)
        let urgent = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60), band: .atLeast(10))
        #expect(try await ids(pool, urgent) == ["alert", "code"])
        #expect(urgent.map(\.priority) == [20, 10])
        let bulk = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60), band: .below(10))
        #expect(try await ids(pool, bulk) == Array(repeating: "blast", count: 5))
        #expect(bulk.allSatisfy { $0.priority == 0 })
        #expect(try await queue.claim(owner: "w", limit: 10, lease: .seconds(60), band: .atLeast(10)).isEmpty)
        await drop()
    }

    @Test("a dead worker's lease runs out and the rows are claimed again, attempt counted")
    func leaseExpiry() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "crash", count: 5)
        let queue = DeliveryQueue(pool: pool)
        let first = try await queue.claim(owner: "dies", limit: 10, lease: .seconds(60))
        #expect(first.count == 5)
        #expect(try await queue.claim(owner: "other", limit: 10, lease: .seconds(60)).isEmpty)
        // The lease runs out (its end moved into the past instead of waiting for it: a loaded
        // machine must not decide this test).
        _ = try await pool.withConnection { try $0.query(sql: "UPDATE delivery_leases SET leased_until = now() - interval '1 second' WHERE owner = 'dies'") }
        let again = try await queue.claim(owner: "other", limit: 10, lease: .seconds(60))
        #expect(again.count == 5)
        #expect(again.allSatisfy { $0.attempt == 2 })
        // The dead worker's late answer no longer counts.
        #expect(try await queue.record(first.map { DeliveryResult(delivery: $0, state: .sent) }, owner: "dies") == 0)
        #expect(try await queue.record(again.map { DeliveryResult(delivery: $0, state: .sent) }, owner: "other") == 5)
        await drop()
    }

    @Test("a lease that ran out is ended by the next claim of its priorities: a code's claim leaves a dead gateway's blast to the blast's lane")
    func expiredLeasesEndedByTheirBand() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "blast", count: 3)
        let queue = DeliveryQueue(pool: pool)
        #expect(try await queue.claim(owner: "dies", limit: 10, lease: .seconds(60), band: .below(10)).count == 3)
        _ = try await pool.withConnection { try $0.query(sql: "UPDATE delivery_leases SET leased_until = now() - interval '1 second'") }
        func leases() async throws -> String? {
            try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM delivery_leases").scalar }
        }
        #expect(try await queue.claim(owner: "codes", limit: 10, lease: .seconds(60), band: .atLeast(10)).isEmpty)
        #expect(try await leases() == "1", "the urgent lane's claim ended the blast's lease")
        let again = try await queue.claim(owner: "blast", limit: 10, lease: .seconds(60), band: .below(10))
        #expect(again.count == 3 && again.allSatisfy { $0.attempt == 2 })
        #expect(try await leases() == "1", "the dead lease ended, the new one taken")
        await drop()
    }

    @Test("a stop ends the owner's leases: what was still held is due at once with its attempt counted; what was written or handed back is left as it was")
    func releaseEndsLeases() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "stop", count: 3)
        let queue = DeliveryQueue(pool: pool)
        let claimed = try await queue.claim(owner: "w", limit: 10, lease: .seconds(600)).sorted { $0.position < $1.position }
        #expect(claimed.count == 3)
        #expect(try await queue.record([DeliveryResult(delivery: claimed[0], state: .sent)], owner: "w") == 1)
        #expect(try await queue.handBack([claimed[1]], owner: "w", delay: .seconds(3600)) == 1)
        // The third was on the wire when the stop came: its lease ends, the push counted.
        #expect(try await queue.release(owner: "someone else") == 0)
        #expect(try await queue.release(owner: "w") == 1)
        let leases = try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM delivery_leases").scalar }
        #expect(leases == "0")
        let again = try await queue.claim(owner: "next", limit: 10, lease: .seconds(600))
        #expect(again.map(\.position) == [claimed[2].position])
        #expect(again.map(\.attempt) == [2])
        // The late outcome of the stopped owner changes nothing.
        #expect(try await queue.record([DeliveryResult(delivery: claimed[2], state: .sent)], owner: "w") == 0)
        #expect(try await queue.record(again.map { DeliveryResult(delivery: $0, state: .sent) }, owner: "next") == 1)
        await drop()
    }

    @Test("deliveries handed back unpushed wait for their delay, keep their attempt count, and only their holder can hand them back")
    func handBack() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "slow", count: 3)
        let queue = DeliveryQueue(pool: pool)
        let claimed = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60))
        #expect(claimed.count == 3)
        #expect(try await queue.handBack(Array(claimed.prefix(2)), owner: "someone else", delay: .seconds(3600)) == 0)
        #expect(try await queue.handBack(Array(claimed.prefix(2)), owner: "w", delay: .seconds(3600)) == 2)
        // Not due again before the delay; the third is still leased to its holder.
        #expect(try await queue.claim(owner: "other", limit: 10, lease: .seconds(60)).isEmpty)
        _ = try await pool.withConnection { try $0.query(sql: "UPDATE deliveries SET next_attempt_at = now() - interval '1 second' WHERE next_attempt_at > now()") }
        let again = try await queue.claim(owner: "other", limit: 10, lease: .seconds(60))
        #expect(Set(again.map(\.position)) == Set(claimed.prefix(2).map(\.position)))
        // Handed back unpushed, the first claim was not an attempt.
        #expect(again.allSatisfy { $0.attempt == 1 })
        #expect(try await queue.record(claimed.suffix(1).map { DeliveryResult(delivery: $0, state: .sent) }, owner: "w") == 1)
        await drop()
    }

    @Test("outcomes: states never move backwards; a retry waits for its time")
    func outcomes() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "out", count: 3)
        let queue = DeliveryQueue(pool: pool)
        let claimed = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60)).sorted { $0.position < $1.position }
        let later = Date().addingTimeInterval(3600)
        let written = try await queue.record([
            DeliveryResult(delivery: claimed[0], state: .sent),
            DeliveryResult(delivery: claimed[1], state: .queued, nextAttemptAt: later, error: "503 ServiceUnavailable"),
            DeliveryResult(delivery: claimed[2], state: .invalidSubscription, error: "Unregistered"),
        ], owner: "w")
        #expect(written == 3)
        #expect(try await queue.record([DeliveryResult(delivery: claimed[0], state: .queued)], owner: "w") == 0)
        #expect(try await queue.claim(owner: "w", limit: 10, lease: .seconds(60)).isEmpty)
        #expect(try await queue.depth() == 1)
        let states = try await NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false)).deliveryStatus(id: "out")
        #expect(states?.map(\.state) == [.sent, .queued, .invalidSubscription])
        await drop()
    }

    @Test("a SENT delivery stays in the queue for its devices to retry, comes back with them, never goes back to QUEUED, and an acknowledgement ends it")
    func sentWithDevicesToRetry() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "dev", count: 2)
        let queue = DeliveryQueue(pool: pool)
        let claimed = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60)).sorted { $0.position < $1.position }
        #expect(claimed.map(\.pendingDevices) == [nil, nil])
        #expect(claimed.map(\.alreadySent) == [false, false])
        // Both accepted on one device, the other device busy: due again at once.
        let now = Date().addingTimeInterval(-1)
        #expect(try await queue.record(claimed.map {
            DeliveryResult(delivery: $0, state: .sent, nextAttemptAt: now, pendingDevices: [41, 42], error: "ServiceUnavailable")
        }, owner: "w") == 2)
        let store = NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        #expect(try await store.deliveryStatus(id: "dev")?.map(\.state) == [.sent, .sent])
        let again = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60)).sorted { $0.position < $1.position }
        #expect(again.map(\.pendingDevices) == [[41, 42], [41, 42]])
        #expect(again.map(\.alreadySent) == [true, true])
        #expect(again.map(\.attempt) == [2, 2])
        // A late result never turns SENT back into QUEUED or a failure.
        #expect(try await queue.record([DeliveryResult(delivery: again[0], state: .sendingFailed)], owner: "w") == 0)
        // The device accepted now: out of the queue, still SENT.
        #expect(try await queue.record([DeliveryResult(delivery: again[0], state: .sent)], owner: "w") == 1)
        // The other one is acknowledged by the phone while its retry waits: out of the queue too.
        #expect(try await queue.record([DeliveryResult(delivery: again[1], state: .sent, nextAttemptAt: Date().addingTimeInterval(3600), pendingDevices: [42])], owner: "w") == 1)
        let device = try await SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false)).devices(user: again[1].userId).first?.id ?? 0
        let acknowledged = try await AcknowledgementStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
            .acknowledge(notificationId: "dev", user: again[1].userId, device: device, target: .delivered)
        #expect(acknowledged == .recorded(.delivered))
        #expect(try await queue.depth() == 0)
        #expect(try await store.deliveryStatus(id: "dev")?.map(\.state) == [.sent, .delivered])
        await drop()
    }

    @Test("a claim whose transaction began before the retry it takes was written: its outcome is written through its lease, not dropped until the lease runs out (and pushed again)")
    func claimBegunBeforeTheRetryWasWritten() async throws {
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        try await enqueue(database.pool, id: "race", count: 1)
        let queue = DeliveryQueue(pool: database.pool)
        let first = try #require(try await queue.claim(owner: "w", limit: 10, lease: .seconds(60)).first)
        // On a loaded machine: a claim's transaction begins (its now() is fixed then) ...
        let claiming = try PostgresConnection(settings: try PostgresConnectionSettings(url: database.url))
        try claiming.query(sql: "BEGIN")
        try claiming.query(sql: "SELECT now()")
        // ... the first push's 503 is written after its retry time has come ...
        let due = Date().addingTimeInterval(-5)
        #expect(try await queue.record([DeliveryResult(delivery: first, state: .queued, nextAttemptAt: due, error: "ServiceUnavailable")],
                                       owner: "w") == 1)
        // ... and the claim reads the queue after that write, taking the retry.
        let lease = try claiming.query(sql: DeliveryQueue.claimStatement(firstKey: 0), ["w", "60", "{0}", "10"]).named
            .map { try $0.decode("lease", as: Int64.self) }
        try claiming.query(sql: "COMMIT")
        #expect(lease.count == 1)
        var second = first
        second.attempt = 2
        second.lease = try #require(lease.first)
        // The retry's push accepted: its outcome is written now, not left for the lease to end.
        #expect(try await queue.record([DeliveryResult(delivery: second, state: .sent)], owner: "w") == 1)
        #expect(try await queue.depth() == 0)
        let states = try await NotificationStore(pool: database.pool, identifiers: UserIdentifiers(caseInsensitive: false)).deliveryStatus(id: "race")
        #expect(states?.map(\.state) == [.sent])
        await database.drop()
    }

    @Test("the oldest due delivery's wait: the longest-waiting due row, 0 once everything is claimed")
    func oldestDueAge() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await enqueue(pool, id: "late", count: 3, priority: 5)
        try await enqueue(pool, id: "low", count: 2)
        _ = try await pool.withConnection {
            try $0.query(sql: "UPDATE deliveries SET next_attempt_at = now() - interval '90 seconds' WHERE user_id = 'low-user-1'")
        }
        let queue = DeliveryQueue(pool: pool)
        let age = try await queue.oldestDueAge()
        #expect(age >= 90 && age < 600, "\(age)")
        _ = try await queue.claim(owner: "w", limit: 100, lease: .seconds(60))
        #expect(try await queue.oldestDueAge() == 0)
        await drop()
    }

    @Test("a claim walks the queue index in order on a fresh day partition without statistics: no bitmap scan, no sort of every due row")
    func claimPlanIgnoresStaleStatistics() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let users = (0..<5_000).map { "plan-user-\($0)" }
        // The day's partition as the engine meets it: analysed while empty, then filled.
        try await TestDatabase.load(pool, script: """
            INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
            SELECT 'bank', 'plan-user-' || n, 'plan-user-' || n, 'd', 'IOS', md5(n::text) FROM generate_series(0, 4999) AS n;
            ANALYZE deliveries;
            """)
        _ = try await NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false)).send(PushNotification(
            id: "plan", recipients: users, timeoutSeconds: 600, pushContent: PushContent(text: "t", type: .universal)))
        let plan = try await pool.withConnection { connection in
            try connection.transaction { connection in
                let firstKey = try LiveDays().firstKey(connection)
                try DeliveryQueue.readInQueueOrder(connection)
                return try connection.query(sql: "EXPLAIN " + DeliveryQueue.claimStatement(firstKey: firstKey), ["w", "60", "{0}", "500"]).rows
                    .compactMap { $0[0] }.joined(separator: "\n")
            }
        }
        #expect(!plan.contains("Bitmap"), "\(plan)")
        #expect(!plan.contains("Sort  ("), "\(plan)")
        #expect(plan.contains("Index Scan using deliveries_"), "\(plan)")
        // The leased rows are left out through one hash of them, never a scan of every lease per row.
        #expect(plan.contains("hashed SubPlan"), "\(plan)")
        #expect(!plan.contains("Anti Join"), "\(plan)")
        let claimed = try await DeliveryQueue(pool: pool).claim(owner: "w", limit: 500, lease: .seconds(60))
        #expect(claimed.count == 500)
        await drop()
    }
}
