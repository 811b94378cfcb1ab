import Foundation
import PigeonCore
import PigeonDomain
import PigeonTestSupport
import Testing
@testable import PigeonStore

/// Typed row decoding at the outbox's claim (issue 25): a row that cannot become a report is never
/// leased and silently dropped from the claim.
@Suite("Outbox claim (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct OutboxClaimTests {
    @Test("a kind this binary does not know waits for one that does; a known kind whose payload does not decode goes to the dead letters with why; the rest are claimed")
    func undecodableRows() async throws {
        let database = try await TestDatabase.isolatedDatabase()
        let pool = database.pool
        let logs = InMemoryLogHandler()
        let outbox = Outbox(pool: pool, logger: Logger(label: "test", level: .info, handler: logs))
        let good = BankReport.notificationExpired(notificationId: "n-good", users: ["alice", "bob"])
        _ = try await pool.transaction { connection in
            try Outbox.enqueue(good, connection)
            _ = try connection.query(sql: "INSERT INTO outbox (kind, payload) VALUES ('reportFromTheFuture', '{\"x\": 1}')")
            _ = try connection.query(sql: "INSERT INTO outbox (kind, payload) VALUES ('pushIsOpened', '{\"unexpected\": true}')")
        }

        let claimed = try await outbox.claim(limit: 10, lease: .seconds(60))
        #expect(claimed.map(\.report) == [good])
        #expect(claimed.first?.attempt == 1)

        let remaining = try await pool.withConnection { connection in
            try connection.query(sql: "SELECT kind, attempts FROM outbox ORDER BY id").rows
        }
        // The claimed report stays (leased) until the bank acknowledges it; the unknown kind is
        // untouched, not even counted as an attempt.
        #expect(remaining == [["reportNotificationExpired", "1"], ["reportFromTheFuture", "0"]])

        let dead = try await outbox.deadLetters()
        #expect(dead.count == 1)
        #expect(dead.first?.kind == "pushIsOpened")
        #expect(dead.first?.notificationId == "(undecodable payload)")
        #expect(dead.first?.lastError == BankReport.undecodablePayload)
        #expect(dead.first?.attempts == 1)
        // Logged once, as the contract asks of a dead letter, naming the row (never its payload).
        let logged = logs.records.filter { $0.message.hasPrefix("report dead-lettered at its claim") }
        #expect(logged.count == 1)
        #expect(logged.first?.level == .error)
        #expect(logged.first?.metadata["kind"] == "pushIsOpened" && logged.first?.metadata["id"] == dead.first.map { String($0.id) })

        // Nothing further is due: the good report is leased, the unknown kind never claimed.
        #expect(try await outbox.claim(limit: 10, lease: .seconds(60)).isEmpty)
        await database.drop()
    }

    @Test("a report handed back unsent (a stopping sender) is due again at once, its claim not counted")
    func handBack() async throws {
        let database = try await TestDatabase.isolatedDatabase()
        let outbox = Outbox(pool: database.pool)
        _ = try await database.pool.transaction { connection in
            try Outbox.enqueue(.pushIsOpened(notificationId: "n", user: "alice"), connection)
        }
        let claimed = try await outbox.claim(limit: 10, lease: .seconds(600))
        #expect(claimed.count == 1)
        #expect(try await outbox.claim(limit: 10, lease: .seconds(600)).isEmpty, "leased")
        try await outbox.handBack(claimed.map(\.id))
        let again = try await outbox.claim(limit: 10, lease: .seconds(600))
        #expect(again.map(\.id) == claimed.map(\.id))
        #expect(again.first?.attempt == 1)
        await database.drop()
    }

    @Test("eight senders claiming at once, reports of every kind mixed with undecodable ones: each report claimed by exactly one sender, each undecodable one dead exactly once")
    func concurrentClaims() async throws {
        let database = try await TestDatabase.isolatedDatabase()
        let pool = database.pool
        let outbox = Outbox(pool: pool)
        var written: [BankReport] = []
        for index in 0..<60 {
            written.append(.pushIsOpened(notificationId: "n-\(index)", user: "u-\(index)"))
            written.append(.notificationExpired(notificationId: "e-\(index)", users: ["u-\(index)", "v-\(index)"]))
            written.append(.passUpdateNotFetched(pass: PassIdentity(passTypeIdentifier: "pass.t", serialNumber: "s-\(index)"), deviceCount: index))
        }
        _ = try await pool.transaction { [written] connection in
            for (index, report) in written.enumerated() {
                try Outbox.enqueue(report, connection)
                if index % 18 == 0 {
                    _ = try connection.query(sql: "INSERT INTO outbox (kind, payload) VALUES ('reportNotificationExpired', '[1, 2]')")
                }
            }
        }
        let claimed = try await withThrowingTaskGroup(of: [ClaimedReport].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var mine: [ClaimedReport] = []
                    while true {
                        let batch = try await outbox.claim(limit: 7, lease: .seconds(600))
                        if batch.isEmpty { return mine }
                        mine += batch
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(claimed.count == written.count)
        #expect(Set(claimed.map(\.id)).count == written.count, "a report claimed twice")
        #expect(Set(claimed.map { "\($0.report)" }) == Set(written.map { "\($0)" }), "every kind decodes back to what was written")
        let dead = try await outbox.deadLetters()
        #expect(dead.count == 10)
        #expect(dead.allSatisfy { $0.lastError == BankReport.undecodablePayload && $0.attempts == 1 })
        await database.drop()
    }
}
