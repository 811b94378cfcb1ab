import Foundation
import PigeonCore
import PigeonDomain
import Synchronization
import Testing
@testable import PigeonDelivery
import PigeonTestSupport

/// The outbox in memory: due reports oldest first, each claim leased (held to PostgreSQL's
/// `Outbox` by `ReportQueueContractTests`).
final class FakeReportQueue: ReportQueue {
    struct Row: Sendable {
        var report: ClaimedReport
        var dueAt: Date
        var error: String?
    }

    private let clock: ManualClock
    let rows: Mutex<[Int64: Row]>
    let buried = Mutex<[Int64: String]>([:])

    init(clock: ManualClock, reports: [ClaimedReport]) {
        self.clock = clock
        rows = Mutex(Dictionary(uniqueKeysWithValues: reports.map { ($0.id, Row(report: $0, dueAt: clock.now())) }))
    }

    func claim(limit: Int, lease: Duration) async throws -> [ClaimedReport] {
        let now = clock.now()
        return rows.withLock { rows in
            let due = rows.values.filter { $0.dueAt <= now }.sorted { ($0.dueAt, $0.report.id) < ($1.dueAt, $1.report.id) }
                .prefix(limit).map(\.report.id).sorted()
            return due.compactMap { id in
                rows[id]?.report.attempt += 1
                rows[id]?.dueAt = now.addingTimeInterval(Double(lease.components.seconds))
                return rows[id]?.report
            }
        }
    }

    func complete(_ ids: [Int64]) async throws {
        // As the pool does: a cancelled caller's write is refused.
        try Task.checkCancellation()
        rows.withLock { rows in ids.forEach { rows[$0] = nil } }
    }

    func reschedule(_ id: Int64, at retryAt: Date, error: String) async throws {
        rows.withLock { rows in
            rows[id]?.dueAt = retryAt
            rows[id]?.error = error
        }
    }

    func bury(_ id: Int64, error: String) async throws {
        rows.withLock { $0[id] = nil }
        buried.withLock { $0[id] = error }
    }

    func handBack(_ ids: [Int64]) async throws {
        // As the pool does: a cancelled caller's write is refused.
        try Task.checkCancellation()
        let now = clock.now()
        rows.withLock { rows in
            for id in ids {
                rows[id]?.dueAt = now
                rows[id]?.report.attempt -= 1
            }
        }
    }
}

@Suite("Outbox sender with fakes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct OutboxSenderTests {
    @Test("stopped with 16 reports on the wire and 48 claimed: the 16 finish and are removed, the 48 are due again at once, their claim uncounted, and no report is sent after the stop")
    func stopHandsBackUnsent() async throws {
        let clock = ManualClock()
        let reports = (1...64).map {
            ClaimedReport(id: Int64($0), report: .pushIsOpened(notificationId: "n\($0)", user: "u"), attempt: 0, createdAt: clock.now())
        }
        let queue = FakeReportQueue(clock: clock, reports: reports)
        let gate = Gate()
        let bank = InMemoryBankReports(answering: { await gate.wait() })
        let sender = OutboxSender(outbox: queue, bank: bank, clock: clock, random: CountingRandom(), lease: .seconds(120),
                                  maxAge: .seconds(3600), metrics: MetricsRegistry(), logger: .silent)
        let stop = GracefulStop()
        let task = Task { await sender.run(until: stop) }
        #expect(await eventually { bank.started.withLock { $0 } == 16 })
        stop.request()
        gate.open()
        await task.value
        #expect(bank.started.withLock { $0 } == 16)
        #expect(bank.received.withLock { $0.count } == 16)
        let left = queue.rows.withLock { Array($0.values) }
        #expect(left.count == 48)
        #expect(left.allSatisfy { $0.dueAt <= clock.now() && $0.report.attempt == 0 })
    }

    @Test("taken reports are removed; a refused one is retried with back-off on the clock and dead-lettered past maxAge, once")
    func retryThenDeadLetter() async throws {
        let clock = ManualClock()
        let taken = ClaimedReport(id: 1, report: .pushIsOpened(notificationId: "ok", user: "u"), attempt: 0, createdAt: clock.now())
        let refused = ClaimedReport(id: 2, report: .notificationExpired(notificationId: "no", users: ["a", "b"]), attempt: 0,
                                    createdAt: clock.now())
        let queue = FakeReportQueue(clock: clock, reports: [taken, refused])
        let bank = InMemoryBankReports(refusing: ["no"])
        let metrics = MetricsRegistry()
        let sender = OutboxSender(outbox: queue, bank: bank, clock: clock, random: CountingRandom(), lease: .seconds(120),
                                  maxAge: .seconds(3600), metrics: metrics, logger: .silent)
        let task = Task { await sender.run() }
        #expect(await eventually { queue.rows.withLock { $0[2]?.error } == "bank answered 500" })
        #expect(bank.received.withLock { $0 } == [taken.report])
        #expect(queue.rows.withLock { $0[1] } == nil)
        // The first retry is about a second later (±20 %), not at once.
        let due = try #require(queue.rows.withLock { $0[2]?.dueAt })
        #expect(due.timeIntervalSince(clock.now()) >= 0.8 && due.timeIntervalSince(clock.now()) <= 1.2)
        // Past maxAge the next failure buries it.
        clock.advance(by: 3601)
        #expect(await eventually { queue.buried.withLock { $0[2] } != nil })
        task.cancel()
        await task.value
        #expect(queue.rows.withLock { $0.isEmpty })
        #expect(metrics.counter(Metric.bankReportsTotal, labels: ["kind": "reportNotificationExpired", "reason": "timeout", "result": "dead"]) == 1)
        #expect(metrics.counter(Metric.bankReportsTotal, labels: ["kind": "pushIsOpened", "result": "sent"]) == 1)
    }
}
