import Foundation
import PigeonDomain

/// The durable outbox of reports to the bank, as the sender uses it. PostgreSQL's `Outbox` in
/// the gateway.
package protocol ReportQueue: Sendable {
    /// Up to `limit` due reports, leased for `lease`.
    func claim(limit: Int, lease: Duration) async throws -> [ClaimedReport]
    /// Deletes reports the bank took.
    func complete(_ ids: [Int64]) async throws
    /// Makes a report due again at `retryAt`, noting why it failed.
    func reschedule(_ id: Int64, at retryAt: Date, error: String) async throws
    /// Moves a report to the dead letters.
    func bury(_ id: Int64, error: String) async throws
    /// Makes claimed reports that were never sent due again at once, their claim not counted
    /// as an attempt (a stopping sender's).
    func handBack(_ ids: [Int64]) async throws
}

/// The bank's proxy service, receiving reports (CONTRACT §3).
package protocol BankReporting: Sendable {
    /// Sends one report; throws when the bank did not take it.
    func send(_ report: BankReport) async throws
}

/// The periodic clean-ups, each step one bounded transaction.
package protocol SweepJobs: Sendable {
    /// Expires deliveries of timed-out notifications and reports them.
    func expire(notifications: Int, rows: Int) async throws -> SweepStep
    /// Deletes subscriptions not reached for longer than `period`.
    func removeStaleDevices(olderThan period: Duration, limit: Int) async throws -> SweepStep
}

/// The history's days: created ahead, dropped when aged out.
package protocol HistoryKeeping: Sendable {
    /// Creates the partitions of the days around `now`; returns how many.
    func prepareDays(around now: Date, daysAhead: Int, lockTimeout: Duration) async throws -> Int
    /// Drops the days that ended more than `days` days before `now`.
    func dropDays(olderThan days: Int, now: Date) async throws -> RetentionStep
}

/// Expiry at the deadline, as the deadline watcher uses it. PostgreSQL's `Sweeps` in the gateway.
package protocol DeadlineJobs: Sendable {
    /// One bounded step expiring what is overdue, the deadlines that just passed first; the
    /// reports go into the outbox in the same transaction. Several processes: one at a time,
    /// the database decides (`ran` false when another held the step).
    func expireDue() async throws -> SweepStep
    /// The earliest deadline not handled yet, passed or to come; `nil` when there is none.
    func nextDeadline() async throws -> Date?
}
