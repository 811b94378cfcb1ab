import Foundation
import PigeonCore
import PigeonDomain
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonDelivery

/// The expiry watcher's jobs, held to both implementations: the in-memory deadlines its tests run
/// on (`FakeDeadlines`, unit tier) and PostgreSQL's `Sweeps` as the gateway composes it
/// (integration tier, a fresh database each case) — the next deadline, and a step that expires
/// what is overdue once, with its report, and leaves what is still to come.
@Suite("Deadline jobs contract: the in-memory deadlines and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct DeadlineJobsContractTests {
    typealias Kind = StoreKind

    /// The jobs, the time they run on, and how to store a send that is overdue or still to come.
    struct Setting {
        var jobs: any DeadlineJobs
        var now: @Sendable () -> Date
        var store: @Sendable (_ id: String, _ overdue: Bool) async throws -> Void
        var finish: @Sendable () async -> Void
    }

    static func make(_ kind: Kind) async throws -> Setting {
        switch kind {
        case .memory:
            let clock = ManualClock()
            let jobs = FakeDeadlines(clock: clock)
            return Setting(jobs: jobs, now: { clock.now() },
                           store: { id, overdue in jobs.store(id, at: clock.now().addingTimeInterval(overdue ? -1 : 600)) }, finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            let identifiers = UserIdentifiers(caseInsensitive: false)
            return Setting(jobs: PostgresDeadlines(sweeps: Sweeps(pool: pool)), now: { Date() }, store: { id, overdue in
                try await OverdueSends.store(id, users: ["alice"], overdue: overdue, pool: pool, identifiers: identifiers)
            }, finish: drop)
        }
    }

    @Test("nothing stored: no next deadline, and a step expires nothing", arguments: Kind.available)
    func nothing(kind: Kind) async throws {
        let setting = try await Self.make(kind)
        #expect(try await setting.jobs.nextDeadline() == nil)
        let step = try await setting.jobs.expireDue()
        #expect(step.rows == 0 && step.reports == 0)
        await setting.finish()
    }

    @Test("an overdue send is the next deadline and expires in one step with one report; one still to come stays and is next; a second step expires nothing",
          arguments: Kind.available)
    func overdue(kind: Kind) async throws {
        let setting = try await Self.make(kind)
        try await setting.store("late", true)
        try await setting.store("soon", false)
        let first = try #require(try await setting.jobs.nextDeadline())
        #expect(first <= setting.now(), "the overdue deadline comes first")
        let step = try await setting.jobs.expireDue()
        #expect(step.ran && step.rows == 1 && step.reports == 1, "\(step)")
        let next = try #require(try await setting.jobs.nextDeadline())
        #expect(next > setting.now().addingTimeInterval(60), "the send still to come is next")
        let again = try await setting.jobs.expireDue()
        #expect(again.rows == 0 && again.reports == 0, "\(again)")
        await setting.finish()
    }
}

/// PostgreSQL's sweeps behind the watcher's seam, as the gateway composes them (PigeonServer
/// declares the same conformance; this test target does not import the composition).
private struct PostgresDeadlines: DeadlineJobs {
    let sweeps: Sweeps

    func expireDue() async throws -> SweepStep { try await sweeps.expireNewestFirst() }
    func nextDeadline() async throws -> Date? { try await sweeps.nextDeadline() }
}
