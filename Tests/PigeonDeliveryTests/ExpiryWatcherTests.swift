import Foundation
import PigeonCore
import PigeonDomain
import Synchronization
import Testing
@testable import PigeonDelivery
import PigeonTestSupport

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

@Suite("Expiry at the deadline with fakes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
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

/// ``FakeDeadlines`` counting the watcher's reads of the next deadline.
final class CountingDeadlines: DeadlineJobs {
    let inner: FakeDeadlines
    let reads = Mutex(0)

    init(_ inner: FakeDeadlines) { self.inner = inner }

    func expireDue() async throws -> SweepStep { try await inner.expireDue() }

    func nextDeadline() async throws -> Date? {
        reads.withLock { $0 += 1 }
        return try await inner.nextDeadline()
    }
}

@Suite("Expiry at the deadline: this process's own deadlines", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ExpiryWatcherOwnDeadlineTests {
    @Test("fifty noted codes expiring one after another are each handled at its deadline without reading the database's next deadline again")
    func ownDeadlinesReadNothing() async {
        let clock = ManualClock()
        let start = clock.now()
        let fake = FakeDeadlines(clock: clock)
        let jobs = CountingDeadlines(fake)
        let notes = DeadlineNotes()
        let watcher = ExpiryWatcher(jobs: jobs, notes: notes, clock: clock, refreshInterval: .seconds(3600), outboxWake: nil,
                                    metrics: MetricsRegistry(), logger: .silent)
        for index in 1...50 {
            let deadline = start.addingTimeInterval(Double(index) / 10)
            fake.store("code-\(index)", at: deadline)
            notes.note(deadline: deadline)
        }
        let task = Task { await watcher.run() }
        for index in 1...50 {
            clock.advance(by: 0.1)
            #expect(await eventually { fake.reported("code-\(index)") == 1 }, "code-\(index)")
            if index < 50 { #expect(fake.reported("code-\(index + 1)") == 0) }
        }
        // Read once at start; the hourly refresh has not come.
        #expect(jobs.reads.withLock { $0 } == 1)
        #expect(notes.count == 0)
        task.cancel()
        await task.value
    }

    @Test("the notes keep every deadline in order, forget those passed, and keep at most their capacity")
    func notesInOrder() {
        let notes = DeadlineNotes()
        let start = Date(timeIntervalSince1970: 1_000_000)
        for offset in [5.0, 1, 4, 2, 3, 1] { notes.note(deadline: start.addingTimeInterval(offset)) }
        #expect(notes.earliest() == start.addingTimeInterval(1))
        notes.remove(through: start.addingTimeInterval(2))
        #expect(notes.earliest() == start.addingTimeInterval(3))
        #expect(notes.count == 3)
        for offset in 0..<(DeadlineNotes.capacity + 10) { notes.note(deadline: start.addingTimeInterval(100 + Double(offset))) }
        #expect(notes.count == DeadlineNotes.capacity)
        notes.remove(through: start.addingTimeInterval(1_000_000))
        #expect(notes.count == 0 && notes.earliest() == nil)
    }
}
