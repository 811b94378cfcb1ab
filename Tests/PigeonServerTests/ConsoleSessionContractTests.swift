import Foundation
import PigeonDomain
@testable import PigeonConsole
import PigeonCrypto
import PigeonServer
import PigeonStore
import PigeonTestSupport
import PostgresDriver
import Synchronization
import Testing

/// One set of cases for the console's sessions and audit trail, run against the in-memory stores
/// (unit tier) and against PostgreSQL (integration tier), so the fake the router tests use keeps
/// the rules the gateway's tables keep (CONTRACT §10).
@Suite("Console sessions and audit trail: the in-memory stores and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConsoleSessionContractTests {
    /// A wall clock the test moves.
    final class Clock: Sendable {
        private let seconds = Mutex(1_800_000_000.0)
        var now: Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
    }

    static func sessionRules(_ store: any ConsoleSessionStore) async throws {
        let clock = Clock()
        let sessions = ConsoleSessions(store: store, idleSeconds: 60, absoluteSeconds: 600, capacity: 2, clock: { clock.now })
        let vera = ConsoleOperator(name: "vera-\(UUID().uuidString.prefix(6))", role: .viewer)
        let (first, started) = try await sessions.start(vera)
        let found = try await sessions.session(id: first)
        #expect(found == started && found?.person.role == .viewer, "the session is found with its operator, role and CSRF token")
        #expect(try await sessions.session(id: SecretToken.generate()) == nil, "an unknown id is no session")
        clock.advance(61)
        #expect(try await sessions.session(id: first) == nil, "61 s idle: ended")
        let (second, _) = try await sessions.start(ConsoleOperator(name: "b", role: .support))
        clock.advance(1)
        let (third, _) = try await sessions.start(ConsoleOperator(name: "c", role: .admin))
        clock.advance(1)
        _ = try await sessions.start(ConsoleOperator(name: "d", role: .viewer))
        #expect(try await sessions.session(id: second) == nil, "the oldest of a full table goes first")
        #expect(try await sessions.session(id: third)?.person == ConsoleOperator(name: "c", role: .admin))
        // Used every 50 s, it lives until 600 s after its start, then ends however busy.
        for _ in 0..<11 {
            clock.advance(50)
            #expect(try await sessions.session(id: third) != nil)
        }
        clock.advance(50)
        #expect(try await sessions.session(id: third) == nil, "past 600 s since sign-in: ended")
        let (fourth, _) = try await sessions.start(ConsoleOperator(name: "e", role: .viewer))
        try await sessions.end(id: fourth)
        #expect(try await sessions.session(id: fourth) == nil, "signed out")
    }

    static func auditRules(_ trail: any AuditTrail, since: Date) async throws {
        let long = String(repeating: "é", count: 300)
        try await trail.record(AuditEntry(operatorName: "ada", role: "admin", address: "192.0.2.1", action: .revoke, target: "alice device p1", reason: "lost phone", outcome: "revoked"))
        try await trail.record(AuditEntry(operatorName: long, role: "", address: "192.0.2.2", action: .signInFailed, target: "form", outcome: "wrong username or password"))
        let entries = try await trail.entries(since: since, offset: 0, limit: 50)
        #expect(entries.count == 2)
        #expect(entries.first?.action == .signInFailed, "newest first")
        #expect(entries.first.map { $0.operatorName.utf8.count <= AuditEntry.fieldLimit } == true, "fields are bounded")
        #expect(entries.last.map { ($0.operatorName, $0.role, $0.address, $0.target, $0.reason, $0.outcome) == ("ada", "admin", "192.0.2.1", "alice device p1", "lost phone", "revoked") } == true)
        #expect(try await trail.entries(since: since, offset: 1, limit: 50).count == 1, "paged")
    }

    @Test("in memory: sessions end idle, at their age and when the table is full; the trail is newest first and bounded")
    func inMemory() async throws {
        try await Self.sessionRules(InMemoryConsoleSessionStore())
        try await Self.auditRules(InMemoryAuditTrail(), since: Date(timeIntervalSince1970: 0))
    }

    @Test("PostgreSQL: the same, and the trail refuses changes: no update, no delete of an entry younger than 365 days, no truncate",
          .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
    func postgres() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        do {
            try await Self.sessionRules(PostgresConsoleSessions(pool: pool))
            let trail = PostgresAuditTrail(pool: pool)
            try await Self.auditRules(trail, since: Date().addingTimeInterval(-60))
            for statement in ["UPDATE console_audit SET outcome = 'nothing happened'", "DELETE FROM console_audit", "TRUNCATE console_audit"] {
                await #expect(throws: PostgresError.self, "\(statement)") {
                    try await pool.withConnection { connection in _ = try connection.query(sql: statement) }
                }
            }
            #expect(try await trail.entries(since: nil, offset: 0, limit: 50).count == 2, "nothing changed")
            #expect(try await trail.expire(olderThanDays: 400) == 0, "the retention sweep deletes only what is old enough")
            // An entry from 401 days ago (written as a restore would) is the sweep's to delete.
            try await pool.withConnection { connection in
                _ = try connection.query(sql: "INSERT INTO console_audit (at, operator, role, address, action, target, reason, outcome) VALUES (now() - interval '401 days', 'old', 'admin', 'x', 'reveal', 'n', '', 'revealed')")
            }
            #expect(try await trail.expire(olderThanDays: 400) == 1)
            await drop()
        } catch {
            await drop()
            throw error
        }
    }
}
