import Foundation
import PigeonCore
import PigeonDomain
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonDelivery

/// The outbox's rules, held to both implementations: the in-memory queue the outbox sender's
/// tests run on (`FakeReportQueue`, unit tier) and PostgreSQL's `Outbox` (integration tier, a
/// fresh database each case) — oldest first, leases, hand-backs that do not count as an attempt,
/// retries at their time, and dead letters.
@Suite("Report queue contract: the in-memory outbox and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ReportQueueContractTests {
    typealias Kind = StoreKind

    /// The outbox holding `count` reports (`n1`…), written in that order.
    struct Setting {
        var queue: any ReportQueue
        /// The queue's time: the fake's clock, or this machine's (PostgreSQL's `now()`).
        var now: @Sendable () -> Date
        var finish: @Sendable () async -> Void
    }

    static func report(_ index: Int) -> BankReport { .pushIsOpened(notificationId: "n\(index)", user: "u") }

    static func make(_ kind: Kind, reports count: Int) async throws -> Setting {
        switch kind {
        case .memory:
            let clock = ManualClock()
            let reports = (1...count).map { ClaimedReport(id: Int64($0), report: report($0), attempt: 0, createdAt: clock.now()) }
            return Setting(queue: FakeReportQueue(clock: clock, reports: reports), now: { clock.now() }, finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            for index in 1...count {
                try await pool.withConnection { connection in try Outbox.enqueue(report(index), connection) }
            }
            return Setting(queue: PostgresReports(outbox: Outbox(pool: pool)), now: { Date() }, finish: drop)
        }
    }

    static func subjects(_ claims: [ClaimedReport]) -> [String] { claims.map(\.report.subject) }

    @Test("a claim takes the oldest reports first, each its first attempt; a leased report is not claimed again until its lease ends",
          arguments: Kind.available)
    func claims(kind: Kind) async throws {
        let setting = try await Self.make(kind, reports: 3)
        let first = try await setting.queue.claim(limit: 2, lease: .seconds(600))
        #expect(Self.subjects(first) == ["n1", "n2"] && first.allSatisfy { $0.attempt == 1 }, "\(first)")
        let second = try await setting.queue.claim(limit: 10, lease: .seconds(600))
        #expect(Self.subjects(second) == ["n3"])
        #expect(try await setting.queue.claim(limit: 10, lease: .seconds(600)).isEmpty, "all three are leased")
        await setting.finish()
    }

    @Test("handed back, claimed reports are due at once and their claim is not counted; completed ones are gone",
          arguments: Kind.available)
    func handBack(kind: Kind) async throws {
        let setting = try await Self.make(kind, reports: 3)
        let claimed = try await setting.queue.claim(limit: 10, lease: .seconds(600))
        try await setting.queue.complete([claimed[0].id])
        try await setting.queue.handBack(claimed.dropFirst().map(\.id))
        let again = try await setting.queue.claim(limit: 10, lease: .seconds(600))
        #expect(Self.subjects(again) == ["n2", "n3"] && again.allSatisfy { $0.attempt == 1 }, "\(again)")
        await setting.finish()
    }

    @Test("a failed report is tried again at its retry time, as its second attempt, not before; a buried one never again",
          arguments: Kind.available)
    func retries(kind: Kind) async throws {
        let setting = try await Self.make(kind, reports: 3)
        let claimed = try await setting.queue.claim(limit: 10, lease: .seconds(600))
        try await setting.queue.reschedule(claimed[0].id, at: setting.now().addingTimeInterval(3600), error: "bank answered 500")
        try await setting.queue.reschedule(claimed[1].id, at: setting.now().addingTimeInterval(-1), error: "bank answered 503")
        try await setting.queue.bury(claimed[2].id, error: "too old")
        let due = try await setting.queue.claim(limit: 10, lease: .seconds(600))
        #expect(Self.subjects(due) == ["n2"] && due.first?.attempt == 2, "\(due)")
        try await setting.queue.handBack(due.map(\.id))
        try await setting.queue.bury(due[0].id, error: "too old")
        #expect(try await setting.queue.claim(limit: 10, lease: .seconds(0)).isEmpty, "n1 waits for its retry time; the buried are gone")
        await setting.finish()
    }
}

/// PostgreSQL's outbox behind the sender's seam, as the gateway composes it (PigeonServer declares
/// the same conformance; this test target does not import the composition).
private struct PostgresReports: ReportQueue {
    let outbox: Outbox

    func claim(limit: Int, lease: Duration) async throws -> [ClaimedReport] { try await outbox.claim(limit: limit, lease: lease) }
    func complete(_ ids: [Int64]) async throws { try await outbox.complete(ids) }
    func reschedule(_ id: Int64, at retryAt: Date, error: String) async throws { try await outbox.reschedule(id, at: retryAt, error: error) }
    func bury(_ id: Int64, error: String) async throws { try await outbox.bury(id, error: error) }
    func handBack(_ ids: [Int64]) async throws { try await outbox.handBack(ids) }
}
