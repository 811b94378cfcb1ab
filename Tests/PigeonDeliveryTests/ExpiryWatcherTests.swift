import Foundation
import PigeonCore
import PigeonDomain
import Synchronization
import Testing
@testable import PigeonDelivery

/// Notifications with deadlines on the test's clock, expired as the database would: each once,
/// its report counted.
final class FakeDeadlines: DeadlineJobs {
    private let clock: any DeliveryClock
    private let deadlines: Mutex<[String: (at: Date, handled: Bool)]>
    /// Reports written, by notification.
    let reports = Mutex<[String: Int]>([:])
    let steps = Mutex(0)

    init(clock: any DeliveryClock, _ deadlines: [String: Date] = [:]) {
        self.clock = clock
        self.deadlines = Mutex(deadlines.mapValues { ($0, false) })
    }

    /// A send stored by any process.
    func store(_ id: String, at deadline: Date) { deadlines.withLock { $0[id] = (deadline, false) } }

    func expireDue() async throws -> SweepStep {
        let now = clock.now()
        steps.withLock { $0 += 1 }
        let due = deadlines.withLock { deadlines -> [String] in
            let due = deadlines.filter { !$0.value.handled && $0.value.at <= now }.map(\.key)
            for id in due { deadlines[id]?.handled = true }
            return due
        }
        reports.withLock { reports in due.forEach { reports[$0, default: 0] += 1 } }
        return SweepStep(rows: due.count, reports: due.count, ran: true, more: false)
    }

    func nextDeadline() async throws -> Date? {
        deadlines.withLock { $0.values.filter { !$0.handled }.map(\.at).min() }
    }

    func reported(_ id: String) -> Int { reports.withLock { $0[id] ?? 0 } }
}

@Suite("Expiry at the deadline with fakes")
struct ExpiryWatcherTests {
    func watcher(_ jobs: FakeDeadlines, notes: DeadlineNotes = DeadlineNotes(), clock: any DeliveryClock, outboxWake: WakeSignal? = nil) -> ExpiryWatcher {
        // Refreshed from the "database" only once an hour: what is found in time is found
        // through the notes or the deadline the watcher already knows.
        ExpiryWatcher(jobs: jobs, notes: notes, clock: clock, refreshInterval: .seconds(3600), outboxWake: outboxWake,
                      metrics: MetricsRegistry(), logger: .silent)
    }

    @Test("a noted send expires at its deadline, not before and not at a sweep; the outbox sender is woken")
    func expiresAtDeadline() async {
        let clock = VirtualClock()
        let start = clock.now()
        let jobs = FakeDeadlines(clock: clock)
        let notes = DeadlineNotes()
        let outboxWake = WakeSignal()
        let task = Task { await watcher(jobs, notes: notes, clock: clock, outboxWake: outboxWake).run() }
        // The watcher read the (empty) database and sleeps until its hourly refresh.
        #expect(await eventually { clock.nextWake == start.addingTimeInterval(3600) })
        let deadline = start.addingTimeInterval(4)
        jobs.store("code", at: deadline)
        notes.note(deadline: deadline)
        // Woken by the note, it sleeps until the deadline: a fact, so nothing can happen before it.
        #expect(await eventually { clock.nextWake == deadline })
        clock.advance(by: 3.9)
        #expect(jobs.reported("code") == 0)
        #expect(clock.nextWake == deadline)
        clock.advance(by: 0.1)
        #expect(await eventually { jobs.reported("code") == 1 })
        // The outbox sender's next idle wait ends at once.
        let woken = Task { await outboxWake.wait(upTo: .seconds(3600), clock: PatientClock()) }
        await woken.value
        task.cancel()
        await task.value
        #expect(jobs.reported("code") == 1)
    }

    @Test("deadlines already in the database at start (a restart, another gateway's sends) are handled at their time, in order")
    func deadlinesFromTheDatabase() async {
        let clock = ManualClock()
        let start = clock.now()
        let jobs = FakeDeadlines(clock: clock, ["first": start.addingTimeInterval(2), "second": start.addingTimeInterval(5),
                                               "overdue": start.addingTimeInterval(-30)])
        let task = Task { await watcher(jobs, clock: clock).run() }
        #expect(await eventually { jobs.reported("overdue") == 1 })
        #expect(jobs.reported("first") == 0)
        clock.advance(by: 2)
        #expect(await eventually { jobs.reported("first") == 1 })
        #expect(jobs.reported("second") == 0)
        clock.advance(by: 3)
        #expect(await eventually { jobs.reported("second") == 1 })
        task.cancel()
        await task.value
    }

    @Test("two gateways watching one database: each deadline is reported once")
    func twoGatewaysOneReport() async {
        let clock = ManualClock()
        let jobs = FakeDeadlines(clock: clock)
        let notesA = DeadlineNotes(), notesB = DeadlineNotes()
        let a = Task { await watcher(jobs, notes: notesA, clock: clock).run() }
        let b = Task { await watcher(jobs, notes: notesB, clock: clock).run() }
        let deadline = clock.now().addingTimeInterval(1)
        jobs.store("code", at: deadline)
        notesA.note(deadline: deadline)
        notesB.note(deadline: deadline)
        clock.advance(by: 1)
        #expect(await eventually { jobs.reported("code") == 1 })
        #expect(await eventually { jobs.steps.withLock { $0 } >= 2 })
        a.cancel()
        b.cancel()
        await a.value
        await b.value
        #expect(jobs.reported("code") == 1)
    }
}
