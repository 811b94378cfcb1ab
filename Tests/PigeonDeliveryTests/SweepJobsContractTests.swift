import Foundation
import PigeonCore
import PigeonDomain
import PigeonStore
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonDelivery

/// The periodic sweeps' jobs and the history's days, held to both implementations: the
/// in-memory fakes the sweep runner's tests use (unit tier) and PostgreSQL's `Sweeps` and
/// `Retention` (integration tier, a fresh database each case).
@Suite("Sweep jobs contract: the in-memory sweeps and history and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct SweepJobsContractTests {
    typealias Kind = StoreKind

    /// The jobs; how to store an overdue send to `recipients` subscribed users, or one still to
    /// come; how to add a device reached `ago` seconds back; the devices left; how to close.
    struct Setting {
        var sweeps: any SweepJobs
        var history: any HistoryKeeping
        var store: @Sendable (_ id: String, _ recipients: Int, _ overdue: Bool) async throws -> Void
        var device: @Sendable (_ id: String, _ reachedAgo: TimeInterval) async throws -> Void
        var devices: @Sendable () async throws -> Set<String>
        var now: @Sendable () -> Date
        var finish: @Sendable () async -> Void
    }

    static func make(_ kind: Kind) async throws -> Setting {
        switch kind {
        case .memory:
            let clock = ManualClock()
            let sweeps = FakeSweeps(clock: clock)
            return Setting(
                sweeps: sweeps, history: FakeHistory(),
                store: { id, recipients, overdue in sweeps.store(id, recipients: recipients, expiresAt: clock.now().addingTimeInterval(overdue ? -1 : 600)) },
                device: { id, ago in sweeps.device(id, reachedAt: clock.now().addingTimeInterval(-ago)) },
                devices: { sweeps.devices }, now: { clock.now() }, finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            let identifiers = UserIdentifiers(caseInsensitive: false)
            let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
            return Setting(
                sweeps: PostgresSweepJobs(sweeps: Sweeps(pool: pool)), history: PostgresHistory(retention: Retention(pool: pool)),
                store: { id, recipients, overdue in
                    try await OverdueSends.store(id, users: (0..<recipients).map { "\(id)-u\($0)" }, overdue: overdue, pool: pool,
                                                 identifiers: identifiers)
                },
                device: { id, ago in
                    try await subscriptions.subscribe(bankClientId: "bank", userId: "owner-\(id)", deviceId: id, platform: .ios, pushToken: "ab")
                    try await pool.withConnection { connection in
                        _ = try connection.query("""
                            UPDATE device_reach SET reached_at = now() - make_interval(secs => \(ago)::double precision)
                            WHERE device_id = (SELECT id FROM devices WHERE device_id = \(id))
                            """)
                    }
                },
                devices: {
                    try await pool.withConnection { connection in
                        Set(try connection.query("SELECT device_id FROM devices WHERE user_id LIKE 'owner-%'").decoded { try $0.decode("device_id", as: String.self) })
                    }
                },
                now: { Date() }, finish: drop)
        }
    }

    @Test("expiry takes at most `notifications` overdue sends a step, oldest deadline first, with a report each; a send still to come stays; a full step says there may be more",
          arguments: Kind.available)
    func expiryByNotifications(kind: Kind) async throws {
        let setting = try await Self.make(kind)
        for id in ["n1", "n2", "n3"] { try await setting.store(id, 2, true) }
        try await setting.store("later", 2, false)
        let first = try await setting.sweeps.expire(notifications: 2, rows: 10_000)
        #expect(first.ran && first.rows == 4 && first.reports == 2 && first.more, "\(first)")
        let second = try await setting.sweeps.expire(notifications: 2, rows: 10_000)
        #expect(second.rows == 2 && second.reports == 1 && !second.more, "\(second)")
        let third = try await setting.sweeps.expire(notifications: 2, rows: 10_000)
        #expect(third.rows == 0 && third.reports == 0 && !third.more, "\(third)")
        await setting.finish()
    }

    @Test("expiry spends at most `rows` deliveries a step: a send larger than that is expired over several steps, a report for each part",
          arguments: Kind.available)
    func expiryByRows(kind: Kind) async throws {
        let setting = try await Self.make(kind)
        try await setting.store("big", 5, true)
        let first = try await setting.sweeps.expire(notifications: 10, rows: 3)
        #expect(first.rows == 3 && first.reports == 1 && first.more, "\(first)")
        let second = try await setting.sweeps.expire(notifications: 10, rows: 3)
        #expect(second.rows == 2 && second.reports == 1 && !second.more, "\(second)")
        await setting.finish()
    }

    @Test("hygiene removes the subscribed devices not reached for the period, oldest first, `limit` a step, and keeps those reached since",
          arguments: Kind.available)
    func staleDevices(kind: Kind) async throws {
        let setting = try await Self.make(kind)
        // Weeks apart: PostgreSQL finds stale devices by the week of their last reach, oldest
        // week first, in no order within a week (3 and 4 days back share a week on some days).
        try await setting.device("old", 3 * 86_400)
        try await setting.device("older", 40 * 86_400)
        try await setting.device("recent", 60)
        let first = try await setting.sweeps.removeStaleDevices(olderThan: .seconds(86_400), limit: 1)
        #expect(first.rows == 1 && first.more, "\(first)")
        #expect(try await setting.devices() == ["old", "recent"], "the oldest first")
        let second = try await setting.sweeps.removeStaleDevices(olderThan: .seconds(86_400), limit: 10)
        #expect(second.rows == 1 && !second.more, "\(second)")
        #expect(try await setting.devices() == ["recent"])
        // The longest period the configuration takes (Int64.max milliseconds) removes nothing and
        // is no error.
        let never = try await setting.sweeps.removeStaleDevices(olderThan: .milliseconds(Int64.max), limit: 10)
        #expect(never.rows == 0 && never.ran, "\(never)")
        #expect(try await setting.devices() == ["recent"])
        await setting.finish()
    }

    @Test("days are made ahead once (asked again, none is made); days past the retention are dropped once, the days within it kept",
          arguments: Kind.available)
    func history(kind: Kind) async throws {
        let setting = try await Self.make(kind)
        // Today's days: a fresh schema may have them already.
        _ = try await setting.history.prepareDays(around: setting.now(), daysAhead: 1, lockTimeout: .seconds(5))
        let later = setting.now().addingTimeInterval(40 * 86_400)
        #expect(try await setting.history.prepareDays(around: later, daysAhead: 2, lockTimeout: .seconds(5)) > 0)
        #expect(try await setting.history.prepareDays(around: later, daysAhead: 2, lockTimeout: .seconds(5)) == 0)
        // Seen from 50 days on with 30 days kept: today's days are past it, the days made ahead are not.
        let aged = try await setting.history.dropDays(olderThan: 30, now: setting.now().addingTimeInterval(50 * 86_400))
        #expect(aged.ran && !aged.dropped.isEmpty)
        #expect(try await setting.history.dropDays(olderThan: 30, now: setting.now().addingTimeInterval(50 * 86_400)).dropped.isEmpty)
        #expect(try await setting.history.prepareDays(around: later, daysAhead: 2, lockTimeout: .seconds(5)) == 0, "the days made ahead were kept")
        await setting.finish()
    }
}

/// PostgreSQL's sweeps and retention behind the runner's seams, as the gateway composes them
/// (PigeonServer declares the same conformances; this test target does not import the composition).
private struct PostgresSweepJobs: SweepJobs {
    let sweeps: Sweeps
    func expire(notifications: Int, rows: Int) async throws -> SweepStep { try await sweeps.expire(notifications: notifications, rows: rows) }
    func removeStaleDevices(olderThan period: Duration, limit: Int) async throws -> SweepStep {
        try await sweeps.removeStaleDevices(olderThan: period, limit: limit)
    }
}

private struct PostgresHistory: HistoryKeeping {
    let retention: Retention
    func prepareDays(around now: Date, daysAhead: Int, lockTimeout: Duration) async throws -> Int {
        try await retention.prepareDays(around: now, daysAhead: daysAhead, lockTimeout: lockTimeout)
    }
    func dropDays(olderThan days: Int, now: Date) async throws -> RetentionStep { try await retention.dropDays(olderThan: days, now: now) }
}
