import Foundation
import PigeonDomain
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonStore

@Suite("Device reach (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct DeviceReachTests {
    func reachedAgo(_ pool: PostgresPool, _ device: Int64) async throws -> Double {
        try await pool.withConnection { connection in
            try connection.query(sql: "SELECT extract(epoch FROM now() - reached_at)::double precision FROM device_reach WHERE device_id = $1",
                                 [String(device)]).scalar.flatMap(Double.init) ?? -1
        }
    }

    @Test("every new device has a reach row from its creation; a push accepted moves it only when it is over an hour old or was never reached; deleting the device removes it")
    func reach() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let old = try await store.subscribe(bankClientId: "bank", userId: "old", deviceId: "d", platform: .ios, pushToken: "ab")
        let recent = try await store.subscribe(bankClientId: "bank", userId: "recent", deviceId: "d", platform: .ios, pushToken: "cd")
        #expect(try await reachedAgo(pool, old) >= 0)
        _ = try await pool.withConnection { connection in
            try connection.query(sql: "UPDATE device_reach SET reached_at = now() - interval '2 days' WHERE device_id = $1", [String(old)])
            try connection.query(sql: "UPDATE device_reach SET reached_at = now() - interval '10 minutes', reached = true WHERE device_id = $1", [String(recent)])
        }
        // A device never reached: its first push marks it reached however recent its registration.
        let fresh = try await store.subscribe(bankClientId: "bank", userId: "fresh", deviceId: "d", platform: .ios, pushToken: "ef")
        func everReached(_ device: Int64) async throws -> String? {
            try await pool.withConnection { try $0.query(sql: "SELECT reached FROM device_reach WHERE device_id = $1", [String(device)]).scalar }
        }
        #expect(try await everReached(fresh) == "f")
        try await store.markDelivered(deviceIds: [old, recent, fresh])
        #expect(try await everReached(fresh) == "t")
        #expect(try await reachedAgo(pool, old) < 60)
        let recentAge = try await reachedAgo(pool, recent)
        #expect(recentAge >= 600 && recentAge < 700, "\(recentAge)")
        try await store.remove(deviceIds: [old])
        #expect(try await reachedAgo(pool, old) == -1)
        await drop()
    }

    @Test("at the default hygiene period's precision, a day: a push to a device kept as reached two hours ago writes nothing (no new row version); one two days ago, or never reached, is marked now")
    func dayPrecision() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let precision = ReachPrecision.forExpiry(.seconds(30 * 86_400))
        let store = SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false), reachPrecision: precision)
        let today = try await store.subscribe(bankClientId: "bank", userId: "today", deviceId: "d", platform: .ios, pushToken: "ab")
        let days = try await store.subscribe(bankClientId: "bank", userId: "days", deviceId: "d", platform: .ios, pushToken: "cd")
        let never = try await store.subscribe(bankClientId: "bank", userId: "never", deviceId: "d", platform: .ios, pushToken: "ef")
        _ = try await pool.withConnection { connection in
            try connection.query(sql: "UPDATE device_reach SET reached_at = now() - interval '2 hours', reached = true WHERE device_id = $1", [String(today)])
            try connection.query(sql: "UPDATE device_reach SET reached_at = now() - interval '2 days', reached = true WHERE device_id = $1", [String(days)])
        }
        func version(_ device: Int64) async throws -> String? {
            try await pool.withConnection { try $0.query(sql: "SELECT ctid::text FROM device_reach WHERE device_id = $1", [String(device)]).scalar }
        }
        let before = try await version(today)
        try await store.markDelivered(deviceIds: [today, days, never])
        #expect(try await version(today) == before, "a device reached within the day is not written")
        let todayAge = try await reachedAgo(pool, today)
        #expect(todayAge >= 7_200 && todayAge < 7_300, "\(todayAge)")
        #expect(try await reachedAgo(pool, days) < 60)
        let neverReached = try await pool.withConnection { try $0.query(sql: "SELECT reached FROM device_reach WHERE device_id = $1", [String(never)]).scalar }
        #expect(neverReached == "t", "a first reach is marked however recent the registration")
        await drop()
    }
}
