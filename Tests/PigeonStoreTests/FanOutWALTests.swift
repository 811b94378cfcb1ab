import Foundation
import PigeonDomain
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonStore

/// What a fan-out writes to PostgreSQL's WAL, read back with `pg_walinspect` (issue 48): every
/// record a delivery's claim, outcome, device push and reach write is WAL the bank's next
/// one-time code waits behind at its commit. Each test runs in a database of its own, and counts
/// only the records of that database's relations.
@Suite("A fan-out's WAL (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct FanOutWALTests {
    /// The WAL records between two positions that touch this database's relations, as (relation,
    /// resource manager, record type) with their count.
    struct Records {
        var counts: [String: Int]

        func count(_ relation: String, _ kind: String) -> Int {
            // A record that also starts a new page is the same kind ("Heap/INSERT+INIT").
            counts.filter { $0.key.hasPrefix(relation) && ($0.key.hasSuffix(" " + kind) || $0.key.hasSuffix(" " + kind + "+INIT")) }
                .map(\.value).reduce(0, +)
        }

        var total: Int { counts.values.reduce(0, +) }
    }

    func position(_ pool: PostgresPool) async throws -> String {
        try await pool.withConnection { try $0.query(sql: "SELECT pg_current_wal_insert_lsn()::text").scalar ?? "0/0" }
    }

    /// This database's records from `start` to now, keyed "relation resource_manager/record_type"
    /// (a partition's name without its day: `deliveries_p`, `device_pushes_p`; an index by name).
    func records(_ pool: PostgresPool, since start: String) async throws -> Records {
        let rows = try await pool.withConnection { connection in
            // Records are read up to what is flushed: first a commit that writes a record and
            // waits for its flush (the test cluster runs with synchronous_commit off).
            _ = try connection.transaction { connection in
                try connection.query(sql: "SELECT set_config('synchronous_commit', 'on', true), pg_logical_emit_message(true, 'pigeon-test', 'flush')")
            }
            return try connection.query(sql: """
                WITH mine AS (
                    SELECT r.resource_manager, r.record_type,
                           substring(r.block_ref from 'rel [0-9]+/[0-9]+/([0-9]+)')::oid AS node
                    FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_flush_lsn()) r
                    WHERE r.block_ref ~ ('rel [0-9]+/' || (SELECT oid FROM pg_database WHERE datname = current_database()) || '/')
                )
                SELECT regexp_replace(COALESCE(c.relname, 'other'), '[0-9]{8}', '') || ' ' || m.resource_manager || '/' || m.record_type AS kind,
                       count(*)::integer AS n
                FROM mine m LEFT JOIN pg_class c ON c.relfilenode = m.node
                GROUP BY 1
                """, [start]).decoded { row in (try row.decode("kind", as: String.self), try row.decode("n", as: Int.self)) }
        }
        return Records(counts: Dictionary(uniqueKeysWithValues: rows))
    }

    /// `count` users with one iPhone each, a notification to all of them, and the devices' ids.
    func fanOut(_ pool: PostgresPool, count: Int) async throws -> [String: Int64] {
        let identifiers = UserIdentifiers(caseInsensitive: false)
        let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
        var devices: [String: Int64] = [:]
        for index in 0..<count {
            let user = "user-\(index)"
            devices[user] = try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "d", platform: .ios, pushToken: "ab\(index)")
        }
        _ = try await NotificationStore(pool: pool, identifiers: identifiers).send(PushNotification(
            id: "blast", recipients: devices.keys.sorted(), timeoutSeconds: 600, pushContent: PushContent(text: "t", type: .universal)))
        return devices
    }

    func pushed(_ delivery: ClaimedDelivery, device: Int64) -> DeliveryResult {
        DeliveryResult(delivery: delivery, state: .sent, devices: [DevicePush(
            deviceRowId: device, deviceId: "d", platform: .ios, appId: "app", maskedToken: "ab…", state: .sent, serviceId: "apns-\(delivery.position)")])
    }

    /// Runs `body` with the WAL from now on kept until it returns (a physical replication slot
    /// reserving it): the other tests running at once write WAL too, and a checkpoint would
    /// otherwise remove the segments `body` reads back (seen in a loaded CI run).
    func keepingWAL(_ pool: PostgresPool, _ body: () async throws -> Void) async throws {
        let slot = "pigeon_wal_test_" + UUID().uuidString.prefix(8).lowercased()
        _ = try await pool.withConnection { connection in
            // One left by a run that died half way would keep the cluster's WAL for ever (only
            // this test makes such slots, one at a time).
            try connection.query(sql: """
                SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
                WHERE slot_name LIKE 'pigeon\\_wal\\_test\\_%' AND NOT active
                """)
            try connection.query(sql: "SELECT pg_create_physical_replication_slot($1, true)", [slot])
        }
        do {
            try await body()
        } catch {
            _ = try? await pool.withConnection { try $0.query(sql: "SELECT pg_drop_replication_slot($1)", [slot]) }
            throw error
        }
        _ = try await pool.withConnection { try $0.query(sql: "SELECT pg_drop_replication_slot($1)", [slot]) }
    }

    @Test("a fan-out's claim writes one lease row and nothing to its deliveries, a first push's device row is one plain insert, a device's reach within its week is a HOT update; a second notification to the devices reached within the day writes no reach record: ≤ 6 records a delivery")
    func fanOutRecords() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        try await keepingWAL(pool) { try await fanOutRecords(pool) }
        await drop()
    }

    func fanOutRecords(_ pool: PostgresPool) async throws {
        _ = try await pool.withConnection { try $0.query(sql: "CREATE EXTENSION IF NOT EXISTS pg_walinspect") }
        let devices = try await fanOut(pool, count: 200)
        let queue = DeliveryQueue(pool: pool)
        let subscriptions = SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let week = { try await pool.withConnection { try $0.query(sql: "SELECT (pigeon_day(now()) / 7)::text").scalar } }
        let firstWeek = try await week()

        let beforeClaim = try await position(pool)
        let claimed = try await queue.claim(owner: "w", limit: 500, lease: .seconds(60))
        #expect(claimed.count == 200)
        let claim = try await records(pool, since: beforeClaim)
        // The claim writes its lease, one row, and nothing to the deliveries it took.
        #expect(claim.counts.keys.filter { $0.hasPrefix("deliveries_p") }.isEmpty, "\(claim.counts)")
        #expect(claim.count("delivery_leases", "Heap/INSERT") == 1, "\(claim.counts)")

        let beforeOutcome = try await position(pool)
        #expect(try await queue.record(claimed.map { pushed($0, device: devices[$0.userId] ?? 0) }, owner: "w") == 200)
        try await subscriptions.markDelivered(deviceIds: Array(devices.values))
        let outcome = try await records(pool, since: beforeOutcome)
        // A first attempt's device rows: one heap record each (no speculative insert and its
        // confirmation) and one key entry.
        #expect(outcome.count("device_pushes_p", "Heap/INSERT") == 200, "\(outcome.counts)")
        #expect(outcome.count("device_pushes_p", "Heap/HEAP_CONFIRM") == 0, "\(outcome.counts)")
        // The reach: each device's first, within the week it registered: HOT, no index entry.
        if try await week() == firstWeek {
            #expect(outcome.count("device_reach", "Heap/HOT_UPDATE") == 200, "\(outcome.counts)")
            #expect(outcome.count("device_reach", "Heap/UPDATE") == 0, "\(outcome.counts)")
            #expect(outcome.count("device_reach_", "Btree/INSERT_LEAF") == 0, "\(outcome.counts)")
        }
        let perDelivery = Double(claim.total + outcome.total) / 200
        // A ratchet on the whole: 15.3 records a delivery before issue 48's first steps, 11.5
        // with the claim's row locks, the upsert and the reach's index entry gone, 6.2 with the
        // lease in a row of its own and the day's partition half full: the outcome's update and
        // its two index entries, the device's row and its key, the reach.
        #expect(perDelivery <= 7, "\(perDelivery) records a delivery: \(claim.counts) \(outcome.counts)")

        // A second notification to the same devices, reached moments ago, with the default
        // hygiene period's precision (a day): the reach writes nothing, and a delivery's fan-out
        // is the outcome's update with its two index entries, the device's row and its key.
        let identifiers = UserIdentifiers(caseInsensitive: false)
        _ = try await NotificationStore(pool: pool, identifiers: identifiers).send(PushNotification(
            id: "again", recipients: devices.keys.sorted(), timeoutSeconds: 600, pushContent: PushContent(text: "t", type: .universal)))
        let daily = SubscriptionStore(pool: pool, identifiers: identifiers, reachPrecision: ReachPrecision.forExpiry(.seconds(30 * 86_400)))
        let beforeAgain = try await position(pool)
        let again = try await queue.claim(owner: "w", limit: 500, lease: .seconds(60))
        #expect(again.count == 200)
        #expect(try await queue.record(again.map { pushed($0, device: devices[$0.userId] ?? 0) }, owner: "w") == 200)
        try await daily.markDelivered(deviceIds: Array(devices.values))
        let second = try await records(pool, since: beforeAgain)
        // (Reading the reach's pages may prune the first notification's old versions: a record a
        // page, not a delivery.)
        #expect(second.count("device_reach", "Heap/HOT_UPDATE") + second.count("device_reach", "Heap/UPDATE") == 0, "\(second.counts)")
        let perDeliveryAgain = Double(second.total) / 200
        #expect(perDeliveryAgain <= 6, "\(perDeliveryAgain) records a delivery: \(second.counts)")
    }

    @Test("a first attempt's device row that exists after all (never written by the engine) is upserted, not an error")
    func firstAttemptRowAlreadyThere() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let devices = try await fanOut(pool, count: 3)
        let queue = DeliveryQueue(pool: pool)
        let claimed = try await queue.claim(owner: "w", limit: 10, lease: .seconds(60)).sorted { $0.position < $1.position }
        #expect(claimed.map(\.attempt) == [1, 1, 1])
        let first = claimed[0]
        let device = devices[first.userId] ?? 0
        _ = try await pool.withConnection { connection in
            try connection.query(sql: """
                INSERT INTO device_pushes (notification_key, position, device_row_id, device_id, platform, app_id, token_masked, state, updated_at)
                VALUES ($1, $2, $3, 'd', 'ios', 'app', 'ab…', 'RETRYING', now())
                """, [String(first.notificationKey), String(first.position), String(device)])
        }
        #expect(try await queue.record(claimed.map { pushed($0, device: devices[$0.userId] ?? 0) }, owner: "w") == 3)
        let rows = try await pool.withConnection { connection in
            try connection.query(sql: "SELECT position, state, attempts FROM device_pushes ORDER BY position").decoded { row in
                "\(try row.decode("position", as: Int.self)) \(try row.decode("state", as: String.self)) \(try row.decode("attempts", as: Int.self))"
            }
        }
        #expect(rows == ["\(claimed[0].position) SENT 2", "\(claimed[1].position) SENT 1", "\(claimed[2].position) SENT 1"])
        await drop()
    }

    @Test("claims from two processes at once, of the same priority or of overlapping bands, never lease one delivery twice: they take turns per priority")
    func concurrentClaimsTakeTurns() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        _ = try await fanOut(pool, count: 600)
        _ = try await pool.withConnection { try $0.query(sql: "UPDATE deliveries SET priority = 10") }
        // Two processes (each queue takes its own turns in-process), one of them configured with
        // an urgent lane whose band overlaps the other's.
        let first = DeliveryQueue(pool: pool), second = DeliveryQueue(pool: pool)
        var claimed: [Int] = []
        for _ in 0..<3 {
            async let a = first.claim(owner: "a", limit: 120, lease: .seconds(60))
            async let b = second.claim(owner: "b", limit: 120, lease: .seconds(60), band: .atLeast(5))
            async let c = second.claim(owner: "b", limit: 60, lease: .seconds(60), band: .below(20))
            let (x, y, z) = try await (a, b, c)
            claimed += (x + y + z).map(\.position)
        }
        #expect(claimed.count == 600)
        #expect(Set(claimed).count == claimed.count, "a delivery was leased twice")
        let leases = try await pool.withConnection { connection in
            try connection.query(sql: "SELECT sum(cardinality(positions))::integer FROM delivery_leases").scalar(as: Int.self, "leased")
        }
        #expect(leases == 600)
        await drop()
    }
}
