import Foundation
import PigeonCore
import PigeonStore
import PigeonTestSupport
import Testing

/// Erasing confidential content survives a crash (CONTRACT §8): `kill -9` in the middle of
/// erasing leaves each notification with its whole content or none of it, and the next process
/// finishes the erasure.
@Suite("Confidential erasure under kill -9", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"), .enabled(if: TestTier.runsSystem, "system tier (a gateway killed with -9): PIGEON_TEST_TIER"))
struct ConfidentialErasureCrashTests {
    static let total = 200_000

    @Test("kill -9 during erasure: every notification keeps its whole content or none; a second process erases the rest")
    func killDuringErasure() async throws {
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        // Confidential notifications that are over (their timeout passed, no recipient left):
        // enough of them that erasing takes many steps.
        try await TestDatabase.load(database.pool, script: """
            INSERT INTO notifications (key, id, recipient_count, timeout_seconds, confidential, push_text, push_type,
                push_detail_keys, push_detail_values, detail_keys, detail_values, created_at, expires_at)
            SELECT pigeon_notification_key(now()), 'crash-' || g, 0, 60, true, 'Code 482913', 'PIN_CODE',
                '{target}', '{482913}', '{name}', '{ACME}', now() - interval '2 minutes', now() - interval '1 minute'
            FROM generate_series(1, \(Self.total)) g
            """)
        func count(_ condition: String) async throws -> Int {
            try await database.pool.withConnection { try $0.query(sql: "SELECT count(*) FROM notifications WHERE \(condition)").scalar.flatMap(Int.init) ?? -1 }
        }
        let configuration = """
            dbUrl = \(database.url)
            dbPoolSize = 4
            migrationsPath = \(TestDatabase.migrationsDirectory.path)
            expirySweepIntervalSeconds = 1
            logLevel = info
            """
        let first = try await GatewayProcess.start(configuration: configuration)
        var erasedAtKill = 0
        for _ in 0..<3000 where erasedAtKill == 0 {
            erasedAtKill = try await count("content_erased_at IS NOT NULL")
            if erasedAtKill == 0 { try await Task.sleep(for: .milliseconds(10)) }
        }
        first.signal(SIGKILL)
        _ = await first.waitForExit()
        let erasedAfterKill = try await count("content_erased_at IS NOT NULL")
        #expect(erasedAfterKill > 0, "nothing was erased before the kill; log: \(first.log.suffix(2000))")
        #expect(erasedAfterKill < Self.total, "the erasure finished before the kill; the test proves nothing")
        let whole = "content_erased_at IS NULL AND push_text = 'Code 482913' AND push_detail_values = '{482913}' AND detail_values = '{ACME}'"
        let none = "content_erased_at IS NOT NULL AND push_text = '' AND push_detail_keys = '{}' AND push_detail_values = '{}' AND detail_keys IS NULL AND detail_values IS NULL"
        #expect(try await count("NOT ((\(whole)) OR (\(none)))") == 0, "a notification was left half erased")

        let second = try await GatewayProcess.start(configuration: configuration)
        var left = Self.total
        for _ in 0..<1200 where left > 0 {
            left = try await count("content_erased_at IS NULL")
            if left > 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(left == 0, "the second process did not finish the erasure; log: \(second.log.suffix(2000))")
        // (Column by column: a whole row's text holds keys and times, whose digits may contain any code.)
        #expect(try await count("push_text LIKE '%482913%' OR array_to_string(push_detail_values, ',') LIKE '%482913%' OR array_to_string(detail_values, ',') LIKE '%ACME%'") == 0)
        second.signal(SIGTERM)
        _ = await second.waitForExit()
        await database.drop()
    }
}
