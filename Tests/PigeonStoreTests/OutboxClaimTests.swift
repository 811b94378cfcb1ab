import Foundation
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
        let outbox = Outbox(pool: pool)
        let good = BankReport.notificationExpired(notificationId: "n-good", users: ["alice", "bob"])
        _ = try await pool.transaction { connection in
            try Outbox.enqueue(good, connection)
            _ = try connection.query("INSERT INTO outbox (kind, payload) VALUES ('reportFromTheFuture', '{\"x\": 1}')")
            _ = try connection.query("INSERT INTO outbox (kind, payload) VALUES ('pushIsOpened', '{\"unexpected\": true}')")
        }

        let claimed = try await outbox.claim(limit: 10, lease: .seconds(60))
        #expect(claimed.map(\.report) == [good])
        #expect(claimed.first?.attempt == 1)

        let remaining = try await pool.withConnection { connection in
            try connection.query("SELECT kind, attempts FROM outbox ORDER BY id").rows
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

        // Nothing further is due: the good report is leased, the unknown kind never claimed.
        #expect(try await outbox.claim(limit: 10, lease: .seconds(60)).isEmpty)
        await database.drop()
    }
}
