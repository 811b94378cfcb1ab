import Foundation
import PigeonCore
import PostgresDriver
import Synchronization

/// Keeps the planner's statistics of a day's `deliveries` partition close to its size while sends
/// fill it, instead of waiting for autovacuum.
///
/// Every statement runs with a generic plan, made once per connection from the statistics of
/// that moment and made again only when they change. A day's partition is analyzed while it is
/// small; a blast then adds a million rows in one commit, and until autovacuum analyzes the
/// partition (a minute or more later) the engine's claim and outcome statements kept their
/// small-table plan: a hash over every delivery of the blast for each batch of 500 (88 ms a
/// claim with 200,000 recipients), or a loop over all of them for each row (a claim cancelled
/// by the 30 s statement timeout with a million, the blast standing still).
///
/// So a day's partition is analyzed again once its rows have grown by a fifth (at least
/// ``Policy/minimumRows``) since its last analysis. A send that is that big by itself is analyzed
/// inside its own transaction, just before it commits: the new statistics become visible with
/// its rows, so no claim ever sees the blast with the old plans. Smaller sends add up and the
/// analysis runs in the background, never delaying a caller.
final class FreshStatistics: Sendable {
    /// When a day's partition is analyzed again.
    struct Policy: Sendable {
        /// Rows written since the last analysis before another is worth its cost.
        var minimumRows = 10_000
        /// Growth, as a fraction of the rows the last analysis counted, that starts another.
        var growth = 0.2
        /// How long a send's own analysis waits for the partition's lock before it leaves the
        /// analysis to the background.
        var lockTimeoutMilliseconds = 2_000
    }

    private let lockTimeoutMilliseconds: Int
    private let minimumRows: Int

    private let pool: PostgresPool
    private let logger: Logger?
    private let ledger: Mutex<Ledger>

    init(pool: PostgresPool, policy: Policy = Policy(), logger: Logger? = nil) {
        self.pool = pool
        self.logger = logger
        self.ledger = Mutex(Ledger(policy: policy))
        self.lockTimeoutMilliseconds = max(1, policy.lockTimeoutMilliseconds)
        self.minimumRows = policy.minimumRows
    }

    /// Inside a send's transaction, once its rows are written: analyzes the day of every
    /// notification key whose rows alone call for it. Answers what was analyzed, for
    /// ``committed(_:analyzed:)`` (or ``abandoned(_:)`` if the transaction fails).
    ///
    /// The statistics are never worth the send: each analysis runs in a savepoint, waits at
    /// most ``Policy/lockTimeoutMilliseconds`` (2 s) for the partition's lock (another analysis, a vacuum), and one that fails is
    /// rolled back to its savepoint and left to the background; only a lost connection fails
    /// the send.
    func analyzeWithin(_ rowsByKey: [Int64: Int], on connection: PostgresConnection) throws -> [Int64: Double] {
        let due = ledger.withLock { $0.takeWithin(rowsByKey) }
        var analyzed: [Int64: Double] = [:]
        for (index, (day, key)) in due.enumerated() {
            do {
                try connection.query(sql: "SAVEPOINT pigeon_fresh_statistics")
                try connection.query("SELECT set_config('lock_timeout', \(String(lockTimeoutMilliseconds)), true)")
                analyzed[day] = try Self.analyzePartition(of: key, connection) ?? 0
                try connection.query(sql: "RELEASE SAVEPOINT pigeon_fresh_statistics")
            } catch let error as PostgresError where !error.isConnectionFailure && connection.isUsable {
                _ = try? connection.query(sql: "ROLLBACK TO SAVEPOINT pigeon_fresh_statistics")
                analyzed[day] = nil
                abandoned([day])
                logger?.warning("could not analyze a day's deliveries with its send; left to the background",
                                metadata: ["error": "\(error)"])
            } catch {
                abandoned(due[index...].map(\.day) + analyzed.keys)
                throw error
            }
        }
        return analyzed
    }

    /// False when `rows` written by one send are too few for ``analyzeWithin(_:on:)`` ever to
    /// analyze anything: such a send needs no statement after its insert.
    func mayAnalyzeWithin(rows: Int) -> Bool {
        rows >= minimumRows
    }

    /// After a send committed: its rows per notification key, and the days analyzed within it.
    /// Other days' rows are noted; a day they have grown enough is analyzed in the background.
    func committed(_ rowsByKey: [Int64: Int], analyzed: [Int64: Double] = [:]) {
        let due = ledger.withLock { ledger in
            let again = analyzed.compactMap { day, rows in ledger.finishedWithin(day: day, rows: rows).map { (day: day, key: $0) } }
            return again + ledger.noteWritten(rowsByKey.filter { analyzed[Self.day(of: $0.key)] == nil })
        }
        due.forEach { analyze(day: $0.day, key: $0.key) }
    }

    /// A send's transaction failed after ``analyzeWithin(_:on:)``: its analyses did not happen.
    func abandoned(_ days: [Int64]) {
        ledger.withLock { ledger in days.forEach { _ = ledger.finished(day: $0, rows: nil) } }
    }

    /// The day a notification key belongs to (its partition), as `pigeon_day`.
    static func day(of key: Int64) -> Int64 { key >> 40 }

    /// Analyzes the `deliveries` partition holding `key`; answers the rows it counted, or `nil`
    /// when no delivery of `key` is there (nothing to analyze).
    private static func analyzePartition(of key: Int64, _ connection: PostgresConnection) throws -> Double? {
        // The partition's name comes from the catalog (regclass text is quoted as needed).
        guard let partition = try connection.query(
            "SELECT tableoid::regclass::text FROM deliveries WHERE notification_key = \(String(key)) LIMIT 1").scalar else {
            return nil
        }
        try connection.query(sql: "ANALYZE \(partition)")
        return try connection.query(
            "SELECT reltuples::double precision FROM pg_class WHERE oid = \(partition)::regclass").scalar.flatMap(Double.init)
    }

    private func analyze(day: Int64, key: Int64) {
        pool.submit { [self] connection in
            let counted = ledger.withLock { $0.writtenSince(day: day) }
            let rows = try Self.analyzePartition(of: key, connection)
            finished(day: day, rows: rows, counted: counted)
        } failure: { [self] error in
            // A closed pool is the gateway stopping: nothing to tell.
            if (error as? PostgresError)?.code != .poolClosed {
                logger?.warning("could not analyze a day's deliveries; the next send will try again",
                                metadata: ["error": "\(error)"])
                finished(day: day, rows: nil)
            }
        }
    }

    private func finished(day: Int64, rows: Double?, counted: Int = 0) {
        let again = ledger.withLock { $0.finished(day: day, rows: rows, counted: counted) }
        if let again { analyze(day: day, key: again) }
    }

    /// What was written to each recent day since its last analysis, and which day is due for
    /// one. A value: the decisions are tested without a database.
    struct Ledger: Sendable {
        private struct Day {
            /// Rows the partition held at its last analysis (0: none by this process yet).
            var rowsAtAnalysis = 0.0
            var writtenSince = 0
            var analyzing = false
            /// A notification key of the day, to find its partition by.
            var key: Int64 = 0
            /// Rows noted when a send's own analysis started (counted by it).
            var notedAtStart = 0
        }

        let policy: Policy
        private var days: [Int64: Day] = [:]

        init(policy: Policy) {
            self.policy = policy
        }

        private func threshold(_ day: Day) -> Double {
            max(Double(policy.minimumRows), policy.growth * day.rowsAtAnalysis)
        }

        /// Rows per day of `rowsByKey`, each with one of its keys.
        private static func byDay(_ rowsByKey: [Int64: Int]) -> [(day: Int64, rows: Int, key: Int64)] {
            var byDay: [Int64: (rows: Int, key: Int64)] = [:]
            for (key, rows) in rowsByKey where rows > 0 {
                byDay[FreshStatistics.day(of: key), default: (0, key)].rows += rows
            }
            return byDay.map { ($0.key, $0.value.rows, $0.value.key) }.sorted { $0.day < $1.day }
        }

        /// The days a send's own rows are enough to analyze, not being analyzed already; marked
        /// as analyzing until ``finishedWithin(day:rows:)`` or ``finished(day:rows:counted:)``.
        mutating func takeWithin(_ rowsByKey: [Int64: Int]) -> [(day: Int64, key: Int64)] {
            var due: [(day: Int64, key: Int64)] = []
            for written in Self.byDay(rowsByKey) {
                var entry = days[written.day] ?? Day()
                guard !entry.analyzing, Double(written.rows) >= threshold(entry) else { continue }
                entry.analyzing = true
                entry.key = written.key
                entry.notedAtStart = entry.writtenSince
                days[written.day] = entry
                due.append((written.day, written.key))
            }
            return due
        }

        /// A send analyzed `day` in its transaction and committed: the statistics count what
        /// was noted before it started. Rows other sends committed meanwhile stay noted; answers
        /// a key of the day when they already call for another analysis (marked as started).
        mutating func finishedWithin(day: Int64, rows: Double) -> Int64? {
            var entry = days[day] ?? Day()
            entry.analyzing = false
            entry.rowsAtAnalysis = rows
            entry.writtenSince = max(0, entry.writtenSince - entry.notedAtStart)
            entry.notedAtStart = 0
            let again = Double(entry.writtenSince) >= threshold(entry)
            entry.analyzing = again
            days[day] = entry
            return again ? entry.key : nil
        }

        /// Notes rows per notification key; answers the days whose analysis starts now (each
        /// with a key of that day), marked as analyzing until ``finished(day:rows:counted:)``.
        mutating func noteWritten(_ rowsByKey: [Int64: Int]) -> [(day: Int64, key: Int64)] {
            var due: [(day: Int64, key: Int64)] = []
            for written in Self.byDay(rowsByKey) {
                var entry = days[written.day] ?? Day()
                entry.writtenSince += written.rows
                entry.key = written.key
                if !entry.analyzing && Double(entry.writtenSince) >= threshold(entry) {
                    entry.analyzing = true
                    due.append((written.day, written.key))
                }
                days[written.day] = entry
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
        /// everything stays noted for the next send to try again. Answers a key of the day when
        /// what was written meanwhile already calls for another analysis (marked as started).
        mutating func finished(day: Int64, rows: Double?, counted: Int = 0) -> Int64? {
            guard var entry = days[day] else { return nil }
            entry.analyzing = false
            if let rows {
                entry.rowsAtAnalysis = rows
                entry.writtenSince = max(0, entry.writtenSince - counted)
                if Double(entry.writtenSince) >= threshold(entry) {
                    entry.analyzing = true
                    days[day] = entry
                    return entry.key
                }
            }
            days[day] = entry
            return nil
        }
    }
}
