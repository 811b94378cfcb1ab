import Foundation
import PigeonDomain
import Synchronization
@testable import PigeonDelivery

/// The sweeps' jobs in memory, on the test's clock, as PostgreSQL's `Sweeps` does them (held to
/// it by SweepJobsContractTests): overdue notifications taken oldest deadline first, at most
/// `notifications` a step and at most `rows` deliveries, a report per notification a step expired
/// some of; subscribed devices not reached for the period removed oldest first.
final class FakeSweeps: SweepJobs {
    private struct Notification {
        var expiresAt: Date
        var expirable: Int
        var handled = false
    }

    private struct World {
        var notifications: [String: Notification] = [:]
        var reachedAt: [String: Date] = [:]
        var failing = 0
    }

    private let clock: any DeliveryClock
    private let world = Mutex(World())
    /// Each step asked for, in order: "expiry" or "hygiene".
    let steps = Mutex<[String]>([])

    init(clock: any DeliveryClock) {
        self.clock = clock
    }

    /// A notification with `recipients` subscribed recipients, due at `expiresAt`.
    func store(_ id: String, recipients: Int, expiresAt: Date) {
        world.withLock { $0.notifications[id] = Notification(expiresAt: expiresAt, expirable: recipients) }
    }

    /// A subscribed device last reached at `reachedAt`.
    func device(_ id: String, reachedAt: Date) {
        world.withLock { $0.reachedAt[id] = reachedAt }
    }

    /// The next `count` steps fail (the database away).
    func fail(next count: Int) {
        world.withLock { $0.failing = count }
    }

    var devices: Set<String> { world.withLock { Set($0.reachedAt.keys) } }

    private func failIfAsked() throws {
        let fail = world.withLock { world in
            defer { world.failing = max(0, world.failing - 1) }
            return world.failing > 0
        }
        if fail { throw FakeFailure.databaseAway }
    }

    func expire(notifications limit: Int, rows: Int) async throws -> SweepStep {
        steps.withLock { $0.append("expiry") }
        try failIfAsked()
        let now = clock.now()
        let limit = max(1, min(limit, 10_000))
        return world.withLock { world in
            let overdue = world.notifications.filter { !$0.value.handled && $0.value.expiresAt <= now }
                .sorted { ($0.value.expiresAt, $0.key) < ($1.value.expiresAt, $1.key) }.prefix(limit)
            var budget = rows, changed = 0, reports = 0, more = overdue.count == limit
            for (id, notification) in overdue {
                guard budget > 0 else {
                    more = true
                    break
                }
                let taken = min(notification.expirable, budget)
                world.notifications[id]?.expirable -= taken
                if taken > 0 { reports += 1 }
                changed += taken
                budget -= taken
                if notification.expirable - taken == 0 {
                    world.notifications[id]?.handled = true
                } else {
                    more = true
                }
            }
            return SweepStep(rows: changed, reports: reports, ran: true, more: more)
        }
    }

    func removeStaleDevices(olderThan period: Duration, limit: Int) async throws -> SweepStep {
        steps.withLock { $0.append("hygiene") }
        try failIfAsked()
        let cutoff = clock.now().addingTimeInterval(-period.inSeconds)
        let limit = max(1, min(limit, 100_000))
        return world.withLock { world in
            let stale = world.reachedAt.filter { $0.value < cutoff }.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.prefix(limit)
            for (id, _) in stale { world.reachedAt[id] = nil }
            return SweepStep(rows: stale.count, reports: 0, ran: true, more: stale.count == limit)
        }
    }
}

/// The history's day partitions in memory (held to PostgreSQL's `Retention` by
/// HistoryKeepingContractTests): days made ahead, days past the retention dropped, by day.
final class FakeHistory: HistoryKeeping {
    private let days = Mutex<Set<Int>>([])
    /// Each pass asked for, in order.
    let passes = Mutex<[String]>([])

    private static func day(_ date: Date) -> Int { Int((date.timeIntervalSince1970 / 86_400).rounded(.down)) }

    func prepareDays(around now: Date, daysAhead: Int, lockTimeout: Duration) async throws -> Int {
        passes.withLock { $0.append("prepare") }
        let today = Self.day(now)
        return days.withLock { days in
            (today - 1...today + max(0, daysAhead)).filter { days.insert($0).inserted }.count
        }
    }

    func dropDays(olderThan retention: Int, now: Date) async throws -> RetentionStep {
        passes.withLock { $0.append("drop") }
        let cutoff = Self.day(now.addingTimeInterval(-Double(max(1, retention)) * 86_400))
        return days.withLock { days in
            let aged = days.filter { $0 + 1 <= cutoff }.sorted()
            aged.forEach { days.remove($0) }
            return RetentionStep(created: 0, dropped: aged.map { "day \($0)" }, ran: true)
        }
    }
}
