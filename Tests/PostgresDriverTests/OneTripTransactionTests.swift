import Foundation
import PigeonCore
import PigeonTestSupport
@testable import PostgresDriver
import Testing
@testable import PigeonStore

/// `PostgresConnection.transactionInOneTrip`: BEGIN, the statements and COMMIT sent at once
/// (libpq's pipeline mode), as the bank's sends are written.
@Suite("PostgreSQL: a transaction in one round trip (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct OneTripTransactionTests {
    private func connection() throws -> PostgresConnection {
        try PostgresConnection(settings: try PostgresConnectionSettings(url: try #require(TestDatabase.url)))
    }

    @Test("every statement's rows come back in order, parameters and NULLs included, and the writes are committed")
    func answersInOrder() throws {
        let connection = try connection()
        let table = "one_trip_\(UInt32.random(in: 0...UInt32.max))"
        try connection.query(sql: "CREATE TABLE \(table) (n integer PRIMARY KEY, label text)")
        defer { _ = try? connection.query(sql: "DROP TABLE \(table)") }

        let answers = try connection.transactionInOneTrip([
            ("INSERT INTO \(table) VALUES ($1::integer, $2) RETURNING n", ["1", "one"]),
            ("INSERT INTO \(table) VALUES ($1::integer, $2) RETURNING n", ["2", nil]),
            ("SELECT count(*) AS rows, count(label) AS labelled FROM \(table)", []),
        ])
        #expect(answers.count == 3)
        #expect(answers[0].scalar == "1" && answers[1].scalar == "2")
        let counts = try answers[2].decodedFirst { (try $0.decode("rows", as: Int.self), try $0.decode("labelled", as: Int.self)) }
        #expect(counts?.0 == 2 && counts?.1 == 1)
        // Committed: another session sees both rows.
        let other = try self.connection()
        #expect(try other.query(sql: "SELECT count(*) FROM \(table)").scalar == "2")
    }

    @Test("a statement that fails rolls back those before it, skips those after, is thrown with its SQL state, and the connection goes on as usual")
    func failureRollsBack() throws {
        let connection = try connection()
        let table = "one_trip_\(UInt32.random(in: 0...UInt32.max))"
        try connection.query(sql: "CREATE TABLE \(table) (n integer PRIMARY KEY)")
        defer { _ = try? connection.query(sql: "DROP TABLE \(table)") }
        try connection.query(sql: "INSERT INTO \(table) VALUES (7)")

        do {
            _ = try connection.transactionInOneTrip([
                ("INSERT INTO \(table) VALUES ($1::integer)", ["1"]),
                ("INSERT INTO \(table) VALUES ($1::integer)", ["7"]),  // duplicate key
                ("INSERT INTO \(table) VALUES ($1::integer)", ["3"]),
            ])
            Issue.record("the duplicate key was not reported")
        } catch {
            #expect(error.sqlState == "23505")
        }
        #expect(try connection.query(sql: "SELECT string_agg(n::text, ',' ORDER BY n) FROM \(table)").scalar == "7")
        // No transaction left open, not in pipeline mode: ordinary statements and another trip work.
        #expect(try connection.query(sql: "SELECT $1::integer + 1", ["41"]).scalar == "42")
        let again = try connection.transactionInOneTrip([("INSERT INTO \(table) VALUES ($1::integer) RETURNING n", ["8"])])
        #expect(again.first?.scalar == "8")
        #expect(try self.connection().query(sql: "SELECT count(*) FROM \(table)").scalar == "2")
    }

    @Test("a lock taken by one statement holds for the next: the second statement sees what a concurrent holder of the lock committed")
    func lockThenRead() async throws {
        let holder = try connection()
        let table = try Self.scratchTable(on: holder)
        defer { _ = try? holder.query(sql: "DROP TABLE \(table)") }
        let key = Int.random(in: 1...1_000_000)
        try holder.query(sql: "BEGIN")
        try holder.query(sql: "SELECT pg_advisory_xact_lock(4242, $1::integer)", ["\(key)"])
        try holder.query(sql: "INSERT INTO \(table) VALUES (1)")

        let waiter = try connection()
        let waiterPID = try #require(try waiter.query(sql: "SELECT pg_backend_pid()").scalar)
        // Blocking libpq calls run on a thread of their own, never on the cooperative pool.
        async let reading = BlockingWork.run("one-trip-waiter") {
            try waiter.transactionInOneTrip([
                ("SELECT count(pg_advisory_xact_lock(4242, $1::integer))", ["\(key)"]),
                ("SELECT count(*) AS seen FROM \(table)", []),
            ])
        }
        // The waiter is blocked on the lock (a condition, not a time): then the holder commits.
        let observer = try connection()
        #expect(try await Self.waitsForLock(observer, space: 4242, key: key, pid: waiterPID))
        try holder.query(sql: "COMMIT")
        let answers = try await reading
        #expect(answers[1].scalar == "1")
    }

    @Test("a trip whose backend is terminated while a statement waits on a lock returns a lost connection, leaves the connection unusable and commits nothing")
    func terminatedWhileWaiting() async throws {
        let holder = try connection()
        let table = try Self.scratchTable(on: holder)
        defer { _ = try? holder.query(sql: "DROP TABLE \(table)") }
        let key = Int.random(in: 1...1_000_000)
        try holder.query(sql: "BEGIN")
        try holder.query(sql: "SELECT pg_advisory_xact_lock(4243, $1::integer)", ["\(key)"])

        let victim = try connection()
        let victimPID = try #require(try victim.query(sql: "SELECT pg_backend_pid()").scalar)
        async let trip: Result<[PostgresRows], PostgresError> = BlockingWork.run("one-trip-victim") {
            Result { () throws(PostgresError) in
                try victim.transactionInOneTrip([
                    ("INSERT INTO \(table) VALUES ($1::integer)", ["1"]),
                    ("SELECT count(pg_advisory_xact_lock(4243, $1::integer))", ["\(key)"]),
                    ("INSERT INTO \(table) VALUES ($1::integer)", ["2"]),
                ])
            }
        }
        let observer = try connection()
        #expect(try await Self.waitsForLock(observer, space: 4243, key: key, pid: victimPID))
        #expect(try observer.query(sql: "SELECT pg_terminate_backend($1::integer)", [victimPID]).scalar == "t")

        switch await trip {
        case .success(let answers): Issue.record("the trip succeeded on a terminated backend: \(answers.count) answers")
        case .failure(let error): #expect(error.isConnectionFailure, "\(error)")
        }
        #expect(!victim.isUsable)
        try holder.query(sql: "COMMIT")
        #expect(try observer.query(sql: "SELECT count(*) FROM \(table)").scalar == "0")
    }

    /// A table of one integer column with a name of its own; the caller drops it.
    private static func scratchTable(on connection: PostgresConnection) throws -> String {
        let table = "one_trip_\(UInt32.random(in: 0...UInt32.max))"
        try connection.query(sql: "CREATE TABLE \(table) (n integer)")
        return table
    }

    /// Waits until backend `pid` waits for the advisory lock (`space`, `key`): a condition, not a time.
    private static func waitsForLock(_ observer: PostgresConnection, space: Int, key: Int, pid: String) async throws -> Bool {
        try await waitUntil {
            try observer.query(sql: 
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::integer AND objid = $2::integer AND pid = $3::integer AND NOT granted",
                ["\(space)", "\(key)", pid]
            ).scalar == "1"
        }
    }

    private static func waitUntil(_ condition: () throws -> Bool) async throws -> Bool {
        for _ in 0..<6_000 {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try condition()
    }
}
