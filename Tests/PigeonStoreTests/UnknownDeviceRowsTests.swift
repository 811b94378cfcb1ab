import Foundation
import PigeonDomain
import PigeonTestSupport
import Testing
@testable import PigeonStore

/// The engine's reads of devices, on rows a newer version may have left behind.
@Suite("Devices a newer version left (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct UnknownDeviceRowsTests {
    @Test("a device of a platform or environment a newer version added is left out of the engine's device reads; the user's other devices are read, nothing throws")
    func unknownPlatformAndEnvironmentLeftOut() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: true))
        var ids: [Int64] = []
        for device in ["today", "harmony", "staging"] {
            ids.append(try await store.subscribe(bankClientId: "bank", userId: "Alice", deviceId: device, platform: .ios,
                                                 pushToken: String(repeating: "ab", count: 32)))
        }
        // What a newer version's migration and registrations would leave behind.
        try await TestDatabase.load(pool, script: """
            DO $$ DECLARE c text; BEGIN
                FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'devices'::regclass AND contype = 'c'
                         AND (pg_get_constraintdef(oid) LIKE '%platform%' OR pg_get_constraintdef(oid) LIKE '%environment%') LOOP
                    EXECUTE format('ALTER TABLE devices DROP CONSTRAINT %I', c);
                END LOOP;
            END $$;
            UPDATE devices SET platform = 'HARMONY' WHERE id = \(ids[1]);
            UPDATE devices SET environment = 'staging' WHERE id = \(ids[2]);
            """)
        let byUser = try await store.devices(users: ["ALICE"])
        #expect(byUser["alice"]?.map(\.deviceId) == ["today"], "\(byUser)")
        #expect(try await store.devices(user: "alice").map(\.deviceId) == ["today"])
        let routes = try await store.routeCounts()
        #expect(routes.map(\.devices) == [1] && routes.first?.route.platform == .ios, "\(routes)")
        #expect(try await store.exist(users: ["alice", "bob"]) == [true, false])
        await drop()
    }
}
