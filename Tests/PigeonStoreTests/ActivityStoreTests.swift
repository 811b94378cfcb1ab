import Foundation
import PigeonDomain
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonStore

/// Live Activities in PostgreSQL under concurrency (CONTRACT §9): the engine recording pushes
/// while phones send tokens and end activities and the bank sends events never deadlocks, and a
/// newer event is never lost to an older one being recorded.
@Suite("Activity store (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct ActivityStoreTests {
    static let identifiers = UserIdentifiers(caseInsensitive: false)

    /// Subscribes `count` Android devices for `user` (they need no token) and returns their row ids.
    static func devices(_ pool: PostgresPool, user: String, count: Int) async throws -> [Int64] {
        try await pool.withConnection { connection in
            try (0..<count).map { index in
                try connection.query(sql: """
                    INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
                    VALUES ('bank', $1, lower($1), $2, 'ANDROID', $3) RETURNING id
                    """, [user, "pixel-\(index)", "token-\(index)-" + String(repeating: "x", count: 40)]).scalar.flatMap(Int64.init) ?? -1
            }
        }
    }

    @Test("forty rounds of the engine recording, the phones ending and the bank updating the same activities at once: no deadlock, no error")
    func noDeadlock() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = ActivityStore(pool: pool, identifiers: Self.identifiers)
        let rows = try await Self.devices(pool, user: "race-user", count: 8)
        for round in 0..<40 {
            let ids = (0..<4).map { "race-\(round)-\($0)" }
            for id in ids {
                _ = try await store.start(ActivityStart(activityId: id, activityType: "T", recipients: ["race-user"], attributes: "{}",
                                                        content: ActivityContent(contentState: "{}")), now: Date())
            }
            let claims = try await store.claim(owner: "engine", limit: 1000, lease: .seconds(60))
            #expect(claims.count == ids.count * rows.count)
            // The engine records every start as sent while, for the same activities in reverse
            // order, phones end them and the bank sends an update.
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await store.record(claims.map { ActivityPushResult(claim: $0, change: .sent) }, owner: "engine") }
                for id in ids.reversed() {
                    for row in rows.reversed() {
                        group.addTask { _ = try await store.endedOnDevice(activityId: id, deviceRowId: row) }
                    }
                    group.addTask { _ = try await store.event(activityId: id, kind: .update, content: ActivityContent(contentState: #"{"n":1}"#), now: Date()) }
                }
                try await group.waitForAll()
            }
        }
        await drop()
    }

    @Test("a device of a platform a newer version added is not claimed (its push waits, unleased, for a process that knows it); the others are")
    func unknownPlatformWaits() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = ActivityStore(pool: pool, identifiers: Self.identifiers)
        let rows = try await Self.devices(pool, user: "future-user", count: 2)
        _ = try await store.start(ActivityStart(activityId: "future-1", activityType: "T", recipients: ["future-user"], attributes: "{}",
                                                content: ActivityContent(contentState: #"{"n":0}"#)), now: Date())
        // What a newer version's migration and registration would leave behind.
        try await TestDatabase.load(pool, script: """
            DO $$ DECLARE c text; BEGIN
                FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'devices'::regclass AND contype = 'c'
                         AND pg_get_constraintdef(oid) LIKE '%platform%' LOOP
                    EXECUTE format('ALTER TABLE devices DROP CONSTRAINT %I', c);
                END LOOP;
            END $$;
            UPDATE devices SET platform = 'HARMONY' WHERE id = \(rows[1]);
            """)
        let claimed = try await store.claim(owner: "engine", limit: 10, lease: .seconds(60))
        #expect(claimed.map(\.device.id) == [rows[0]])
        let waiting = try await pool.withConnection { connection in
            try connection.query(sql: "SELECT lease_owner IS NULL, attempts FROM activity_pushes WHERE device_row_id = $1", [String(rows[1])]).rows
        }
        #expect(waiting == [["t", "0"]])
        await drop()
    }

    @Test("an event replacing a push the engine holds: recording the older push leaves the newer due, never deletes it")
    func newerEventSurvivesRecord() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = ActivityStore(pool: pool, identifiers: Self.identifiers)
        _ = try await Self.devices(pool, user: "order-user", count: 1)
        _ = try await store.start(ActivityStart(activityId: "order-1", activityType: "T", recipients: ["order-user"], attributes: "{}",
                                                content: ActivityContent(contentState: #"{"n":0}"#)), now: Date())
        let started = try await store.claim(owner: "engine", limit: 10, lease: .seconds(60))
        #expect(started.map(\.kind) == [.start])
        try await store.record(started.map { ActivityPushResult(claim: $0, change: .sent) }, owner: "engine")
        #expect(try await store.event(activityId: "order-1", kind: .update, content: ActivityContent(contentState: #"{"n":1}"#), now: Date()) == .queued(devices: 1))
        let first = try await store.claim(owner: "engine", limit: 10, lease: .seconds(60))
        #expect(first.map(\.content.contentState) == [#"{"n":1}"#])
        // While that push is in flight the bank sends a newer one: it replaces the row but keeps the lease.
        #expect(try await store.event(activityId: "order-1", kind: .update, content: ActivityContent(contentState: #"{"n":2}"#), now: Date()) == .queued(devices: 1))
        #expect(try await store.claim(owner: "engine", limit: 10, lease: .seconds(60)).isEmpty, "the row is still leased to the push in flight")
        try await store.record(first.map { ActivityPushResult(claim: $0, change: .sent) }, owner: "engine")
        let next = try await store.claim(owner: "engine", limit: 10, lease: .seconds(60))
        #expect(next.map(\.content.contentState) == [#"{"n":2}"#], "the newer update is due at once")
        #expect(next.first.map { $0.timestamp > first[0].timestamp && $0.lastSentTimestamp == first[0].timestamp } == true)
        await drop()
    }

    @Test("ten events in one second while none reached a device: one timestamp, real time (not ten seconds ahead); once one is sent, the next is later")
    func timestampsKeepToTheClock() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = ActivityStore(pool: pool, identifiers: Self.identifiers)
        _ = try await Self.devices(pool, user: "clock-user", count: 2)
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        _ = try await store.start(ActivityStart(activityId: "clock-1", activityType: "T", recipients: ["clock-user"], attributes: "{}",
                                                content: ActivityContent(contentState: #"{"n":0}"#)), now: now)
        let started = try await store.claim(owner: "engine", limit: 10, lease: .seconds(60))
        try await store.record(started.map { ActivityPushResult(claim: $0, change: .sent) }, owner: "engine")
        let sent = try #require(started.first?.timestamp)
        for n in 1...10 {
            #expect(try await store.event(activityId: "clock-1", kind: .update, content: ActivityContent(contentState: #"{"n":\#(n)}"#), now: now) == .queued(devices: 2))
        }
        let updates = try await store.claim(owner: "engine", limit: 10, lease: .seconds(60))
        #expect(updates.map(\.content.contentState) == [#"{"n":10}"#, #"{"n":10}"#])
        #expect(updates.allSatisfy { $0.timestamp == sent + 1 }, "\(updates.map(\.timestamp)) after \(sent)")
        try await store.record(updates.map { ActivityPushResult(claim: $0, change: .sent) }, owner: "engine")
        // Sent: the next event, in the same second still, must be later than what the phones have.
        #expect(try await store.event(activityId: "clock-1", kind: .update, content: ActivityContent(contentState: #"{"n":11}"#), now: now) == .queued(devices: 2))
        let after = try await store.claim(owner: "engine", limit: 10, lease: .seconds(60))
        #expect(after.allSatisfy { $0.timestamp == sent + 2 }, "\(after.map(\.timestamp))")
        await drop()
    }

    @Test("a device keeps push-to-start tokens for at most 64 activity types; a known type's token is still replaced")
    func startTokensBounded() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = ActivityStore(pool: pool, identifiers: Self.identifiers)
        let row = try await Self.devices(pool, user: "types-user", count: 1)[0]
        for index in 0..<ActivityStore.maximumStartTokensPerDevice {
            #expect(try await store.saveStartToken(deviceRowId: row, activityType: "Type\(index)", token: "ab"))
        }
        #expect(try await store.saveStartToken(deviceRowId: row, activityType: "OneTooMany", token: "ab") == false)
        #expect(try await store.saveStartToken(deviceRowId: row, activityType: "Type0", token: "cd"))
        let stored = try await pool.withConnection { connection in
            (try connection.query(sql: "SELECT count(*) FROM activity_start_tokens").scalar,
             try connection.query(sql: "SELECT token FROM activity_start_tokens WHERE activity_type = 'Type0'").scalar)
        }
        #expect(stored.0 == "64" && stored.1 == "cd")
        await drop()
    }

    @Test("an update replacing a start in flight: sent, the update waits as an update; the process dead, the start goes again with the newer content")
    func updateOverStartInFlight() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = ActivityStore(pool: pool, identifiers: Self.identifiers)
        _ = try await Self.devices(pool, user: "flight-user", count: 1)
        func start(_ id: String) async throws -> [ClaimedActivityPush] {
            _ = try await store.start(ActivityStart(activityId: id, activityType: "T", recipients: ["flight-user"], attributes: "{}",
                                                    content: ActivityContent(contentState: #"{"n":0}"#)), now: Date())
            let claims = try await store.claim(owner: "engine", limit: 10, lease: .seconds(60))
            #expect(claims.map(\.kind) == [.start])
            #expect(try await store.event(activityId: id, kind: .update, content: ActivityContent(contentState: #"{"n":1}"#), now: Date())
                == .queued(devices: 1))
            return claims
        }
        // The start's push succeeds: the newer content waits as an update, never a second start.
        let sent = try await start("flight-sent")
        try await store.record(sent.map { ActivityPushResult(claim: $0, change: .sent) }, owner: "engine")
        let next = try await store.claim(owner: "engine", limit: 10, lease: .seconds(60))
        #expect(next.map(\.kind) == [.update] && next.first?.content.contentState == #"{"n":1}"#)
        try await store.record(next.map { ActivityPushResult(claim: $0, change: .sent) }, owner: "engine")
        // The process holding the start dies (its lease handed back, as a lapsed lease would be):
        // the start goes again, with the newer content.
        _ = try await start("flight-dead")
        try await store.release(owner: "engine")
        let again = try await store.claim(owner: "restarted", limit: 10, lease: .seconds(60))
        #expect(again.map(\.kind) == [.start] && again.first?.content.contentState == #"{"n":1}"#)
        await drop()
    }
}
