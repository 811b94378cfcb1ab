import Foundation
import PigeonDomain
import PigeonTestSupport
import Testing
@testable import PigeonStore

/// Wallet passes in PostgreSQL under concurrency (CONTRACT §7): one registration however many
/// arrive at once, every download attributed once, exactly one not-fetched report a version
/// whatever the interleaving of fetches and expiries, and Wallet logs aged out by the hygiene
/// sweep.
@Suite("Pass store (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct PassStoreTests {
    static let digest = Data(repeating: 7, count: 32)
    static let archive = Data("PK-not-checked-here".utf8)

    static func pass(_ serial: String) -> PassIdentity { PassIdentity(passTypeIdentifier: "pass.com.example.card", serialNumber: serial) }

    @Test("twenty registrations of one Wallet for one pass at once: one row, one 'created', the rest 'already'")
    func concurrentRegistrations() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = PassStore(pool: pool)
        _ = try await store.update(Self.pass("s1"), authenticationDigest: Self.digest, content: Self.archive)
        let results = try await withThrowingTaskGroup(of: PassStore.RegistrationResult.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await store.register(device: "d1", pushToken: "abcd", for: Self.pass("s1"), authenticationDigest: Self.digest,
                                             limits: .init())
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { $0 == .created }.count == 1)
        #expect(results.filter { $0 == .alreadyRegistered }.count == 19)
        #expect(try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM pass_registrations").scalar } == "1")
        await drop()
    }

    @Test("a copy of the pass registered again and again evicts its own registrations, not the owner's day-old Wallet; once all are established, the oldest goes")
    func copiesEvictThemselves() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = PassStore(pool: pool)
        let limits = PassStore.RegistrationLimits(perDevice: 500, perPass: 3)
        _ = try await store.update(Self.pass("s1"), authenticationDigest: Self.digest, content: Self.archive)
        #expect(try await store.register(device: "owner", pushToken: "abcd", for: Self.pass("s1"), authenticationDigest: Self.digest, limits: limits) == .created)
        _ = try await pool.withConnection { try $0.query(sql: "UPDATE pass_registrations SET registered_at = now() - interval '3 days' WHERE device_library_id = 'owner'") }
        for copy in 0..<10 {
            #expect(try await store.register(device: "copy-\(copy)", pushToken: "abcd", for: Self.pass("s1"), authenticationDigest: Self.digest, limits: limits) == .created)
        }
        func devices() async throws -> [String] {
            try await pool.withConnection { connection in
                try connection.query(sql: "SELECT device_library_id FROM pass_registrations ORDER BY device_library_id").decoded { try $0.decode("device_library_id", as: String.self) }
            }
        }
        #expect(try await devices() == ["copy-8", "copy-9", "owner"])
        // Every registration established: the oldest (the owner's, here) makes room.
        _ = try await pool.withConnection { try $0.query(sql: "UPDATE pass_registrations SET registered_at = registered_at - interval '2 days'") }
        #expect(try await store.register(device: "new-phone", pushToken: "abcd", for: Self.pass("s1"), authenticationDigest: Self.digest, limits: limits) == .created)
        #expect(try await devices() == ["copy-8", "copy-9", "new-phone"])
        await drop()
    }

    @Test("fetches and expiries racing on one version: each download marks one Wallet, and the bank gets exactly one report with the expired count")
    func racingSettlements() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        let store = PassStore(pool: pool)
        for round in 0..<8 {
            let pass = Self.pass("race-\(round)")
            _ = try await store.update(pass, authenticationDigest: Self.digest, content: Self.archive)
            for device in ["a", "b", "c", "d"] {
                _ = try await store.register(device: "\(device)-\(round)", pushToken: "abcd", for: pass, authenticationDigest: Self.digest, limits: .init())
            }
            // Version 2 pushed to all four, which now wait; the engine holds a and b (their wait ended).
            _ = try await store.update(pass, authenticationDigest: Self.digest, content: Self.archive)
            _ = try await pool.withConnection { connection in
                try connection.query(sql: """
                    UPDATE pass_registrations SET state = 'SENT', pushes = 2, next_attempt_at = now() + interval '1 hour',
                           lease_owner = CASE WHEN device_library_id LIKE 'a-%' OR device_library_id LIKE 'b-%' THEN 'engine' END
                    WHERE serial_number = $1
                    """, [pass.serialNumber])
            }
            // c and d ask what changed (as Wallet does before it downloads): theirs are the downloads.
            for device in ["c", "d"] { _ = try await store.serialsUpdated(device: "\(device)-\(round)", passType: pass.passTypeIdentifier, since: nil) }
            let expiries = ["a", "b"].map {
                PassPushResult(claim: ClaimedPassPush(pass: pass, deviceLibraryIdentifier: "\($0)-\(round)", pushToken: "abcd", state: .sent,
                                                      version: 2, pushes: 2, failures: 0), change: .expired)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { _ = try await store.recordPassPushes(expiries, owner: "engine") }
                for _ in 0..<2 {
                    group.addTask { _ = try await store.fetch(pass, authenticationDigest: Self.digest, ifModifiedSince: nil) }
                }
                try await group.waitForAll()
            }
            let states = try await store.status(pass)?.devices.map(\.state).sorted { $0.rawValue < $1.rawValue }
            #expect(states == [.expired, .expired, .fetched, .fetched], "round \(round)")
            let reports = try await pool.withConnection { connection in
                try connection.query(sql: "SELECT payload->>'deviceCount' FROM outbox WHERE payload->>'serialNumber' = $1", [pass.serialNumber]).rows
            }
            #expect(reports.map { $0.text(0) } == ["2"], "round \(round)")
        }
        await drop()
    }

    @Test("the hygiene sweep drops Wallet logs older than a week (stored by earlier versions) and keeps the others")
    func logsAgeOut() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        _ = try await pool.withConnection { connection in
            try connection.query(sql: "INSERT INTO pass_logs (peer, message) VALUES ('127.0.0.1', 'fresh')")
            try connection.query(sql: "INSERT INTO pass_logs (peer, message, received_at) VALUES ('127.0.0.1', 'old', now() - interval '8 days')")
        }
        _ = try await Sweeps(pool: pool).removeStaleDevices(olderThan: .seconds(86_400), limit: 100)
        let left = try await pool.withConnection { try $0.query(sql: "SELECT message FROM pass_logs").rows.map { $0.text(0) } }
        #expect(left == ["fresh"])
        await drop()
    }
}
