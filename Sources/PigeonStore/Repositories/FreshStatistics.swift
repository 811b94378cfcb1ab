import Foundation
import PigeonCore
import Synchronization

/// Keeps the planner's statistics of a day's `deliveries` partition close to its size while sends
/// fill it, instead of waiting for autovacuum.
///
/// Every statement runs with a generic plan, made once per connection from the statistics of
/// that moment and made again only when they change. A day's partition is analyzed while it is
/// small; a blast then adds a million rows in one commit, and until autovacuum analyzes the
/// partition (a minute or more later) the engine's claim and outcome statements kept their
/// small-table plan: a hash over every delivery of the blast for each batch of 500 — 88 ms a
/// claim with 200,000 recipients, half a second with a million, the blast crawling and its
/// database work slowing the bank's one-time codes. Analyzing the partition once its rows have
/// grown by a fifth (at least ``Policy/minimumRows``) since its last analysis makes the next
/// plans probe the index per claimed row.
final class FreshStatistics: Sendable {
    /// When a day's partition is analyzed again.
    struct Policy: Sendable {
        /// Rows written since the last analysis before another is worth its cost.
        var minimumRows = 10_000
        /// Growth, as a fraction of the rows the last analysis counted, that starts another.
        var growth = 0.2
    }

    private let pool: PostgresPool
    private let logger: Logger?
    private let ledger: Mutex<Ledger>

    init(pool: PostgresPool, policy: Policy = Policy(), logger: Logger? = nil) {
        self.pool = pool
        self.logger = logger
        self.ledger = Mutex(Ledger(policy: policy))
    }

    /// Notes deliveries just committed, as rows per notification key; analyzes a day's partition
    /// in the background (on a pooled connection, never delaying the caller) when they are enough.
    func noteWritten(_ rowsByKey: [Int64: Int]) {
        let due = ledger.withLock { $0.noteWritten(rowsByKey) }
        due.forEach { analyze(day: $0.day, key: $0.key) }
    }

    /// What was written to each recent day since its last analysis, and which day is due for
    /// one. A value: the decisions are tested without a database.
    struct Ledger: Sendable {
        private struct Day {
            /// Rows the partition held at its last analysis (0: none by this process yet).
            var rowsAtAnalysis = 0.0
            var writtenSince = 0
            var analyzing = false
        }

        let policy: Policy
        private var days: [Int64: Day] = [:]

        init(policy: Policy) {
            self.policy = policy
        }

        /// Notes rows per notification key; answers the days whose analysis starts now (each
        /// with a key of that day), marked as analyzing until ``finished(day:rows:counted:)``.
        mutating func noteWritten(_ rowsByKey: [Int64: Int]) -> [(day: Int64, key: Int64)] {
            var byDay: [Int64: (rows: Int, key: Int64)] = [:]
            for (key, rows) in rowsByKey where rows > 0 {
                byDay[FreshStatistics.day(of: key), default: (0, key)].rows += rows
            }
            var due: [(day: Int64, key: Int64)] = []
            for (day, written) in byDay.sorted(by: { $0.key < $1.key }) {
                var entry = days[day] ?? Day()
                entry.writtenSince += written.rows
                let threshold = max(Double(policy.minimumRows), policy.growth * entry.rowsAtAnalysis)
                if !entry.analyzing && Double(entry.writtenSince) >= threshold {
                    entry.analyzing = true
                    due.append((day, written.key))
                }
                days[day] = entry
            }
            // Only the last few days are written to: forget the others.
            if let newest = days.keys.max() {
                days = days.filter { $0.key >= newest - 2 }
            }
            return due
        }

        /// Rows noted for `day` since its last analysis.
        func writtenSince(day: Int64) -> Int { days[day]?.writtenSince ?? 0 }

        /// An analysis of `day` ended: with `rows`, the partition's new size, and `counted`, the
        /// rows noted before it started (now in the statistics); without, it failed and
        /// everything stays noted for the next send to try again.
        mutating func finished(day: Int64, rows: Double?, counted: Int = 0) {
            guard var entry = days[day] else { return }
            entry.analyzing = false
            if let rows {
                entry.rowsAtAnalysis = rows
                entry.writtenSince = max(0, entry.writtenSince - counted)
            }
            days[day] = entry
        }
    }

    /// The day a notification key belongs to (its partition), as `pigeon_day`.
    static func day(of key: Int64) -> Int64 { key >> 40 }

    private func analyze(day: Int64, key: Int64) {
        pool.submit { [self] connection in
            // The partition's name comes from the catalog (regclass text is quoted as needed).
            guard let partition = try connection.query(
                "SELECT tableoid::regclass::text FROM deliveries WHERE notification_key = $1 LIMIT 1", [String(key)]).scalar else {
                finished(day: day, rows: nil)
                return
            }
            let written = ledger.withLock { $0.writtenSince(day: day) }
            try connection.query("ANALYZE \(partition)")
            let rows = try connection.query(
                "SELECT reltuples::double precision FROM pg_class WHERE oid = $1::regclass", [partition]).scalar.flatMap(Double.init)
            finished(day: day, rows: rows, counted: written)
        } failure: { [self] error in
            // A closed pool is the gateway stopping: nothing to tell.
            if (error as? PostgresError)?.code != .poolClosed {
                logger?.warning("could not analyze a day's deliveries; the next send will try again",
                                metadata: ["error": "\(error)"])
            }
            finished(day: day, rows: nil)
        }
    }

    private func finished(day: Int64, rows: Double?, counted: Int = 0) {
        ledger.withLock { $0.finished(day: day, rows: rows, counted: counted) }
    }
}
