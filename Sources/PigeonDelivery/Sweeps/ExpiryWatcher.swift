import Foundation
import PigeonCore
import PigeonDomain
import Synchronization

/// Expires notifications at their deadline, not at the next sweep: a one-time code that was not
/// acknowledged in time is reported to the bank (whose SMS fallback waits for that report) the
/// moment its `timeout` passes.
///
/// The watcher keeps the nearest deadline in view: the earliest one the database holds (read at
/// start, after each expiry and every `refreshInterval`, so deadlines of sends accepted by
/// another gateway process, or before a restart, are kept too) and any nearer one a send of this
/// process notes (``DeadlineNotes``). When it passes, one expiry step runs (``DeadlineJobs``:
/// the database decides, so a deadline is handled once however many gateways watch it), and the
/// outbox sender is woken to send the report at once. The periodic expiry sweep stays as the
/// safety net.
package final class ExpiryWatcher: Sendable {
    private let jobs: any DeadlineJobs
    private let clock: any DeliveryClock
    private let refreshInterval: Duration
    private let outboxWake: WakeSignal?
    private let notes: DeadlineNotes
    private let metrics: MetricsRegistry
    private let logger: Logger

    package init(jobs: any DeadlineJobs, notes: DeadlineNotes, clock: any DeliveryClock = SystemDeliveryClock(),
                refreshInterval: Duration = .seconds(1), outboxWake: WakeSignal?, metrics: MetricsRegistry, logger: Logger) {
        self.jobs = jobs
        self.notes = notes
        self.clock = clock
        self.refreshInterval = refreshInterval
        self.outboxWake = outboxWake
        self.metrics = metrics
        self.logger = logger
    }

    /// Watches until `stop` is requested (or the task is cancelled).
    ///
    /// The database is read at start, every `refreshInterval`, and after a step that a deadline
    /// read from it (not one this process noted) called for. A step for this process's own
    /// deadlines reads nothing more: with twenty codes a second expiring, reading the database's
    /// next deadline after each step walked the expiry index twenty times a second, and each walk
    /// grew with the day (3 → 9 ms in a 40-minute soak, a fifth of a core).
    package func run(until stop: GracefulStop = GracefulStop()) async {
        var fromDatabase = await readNextDeadline()
        var refreshed = clock.now()
        // Steps in a row that found nothing to do although the database's deadline had passed
        // (another process held the step, or the database's clock is behind ours): waited out
        // with a growing pause, not in a tight loop.
        var idleSteps = 0
        while !stop.shouldStop {
            let now = clock.now()
            let noted = notes.earliest()
            let due = [fromDatabase, noted].compactMap { $0 }.min()
            if let deadline = due, deadline <= now {
                guard let step = await expireStep() else {
                    await stop.sleep(for: .seconds(1), on: clock)
                    continue
                }
                if step.ran && step.more { continue }
                // Every deadline noted up to now was handled by the step (or by the process
                // holding it, when another did).
                notes.remove(through: now)
                if let noted, noted <= now, !step.ran || step.rows > 0 || step.reports > 0 {
                    // Our own deadline called for the step and it was handled (or another
                    // process holds the step): the next ones are noted here or come with the
                    // next refresh. A step that found nothing (the database's clock behind
                    // ours, or a sweep was first) reads the database as below.
                    if let read = fromDatabase, read <= now { fromDatabase = nil }
                    idleSteps = 0
                    continue
                }
                fromDatabase = await readNextDeadline()
                refreshed = clock.now()
                if step.rows == 0 && step.reports == 0, let deadline = fromDatabase, deadline <= refreshed {
                    idleSteps += 1
                    await stop.sleep(for: .milliseconds(min(5_000, 25 << min(idleSteps, 8))), on: clock)
                } else {
                    idleSteps = 0
                }
                continue
            }
            let refreshAt = refreshed.addingTimeInterval(refreshInterval.inSeconds)
            let wakeAt = min(due ?? refreshAt, refreshAt)
            await stop.wait(for: notes.wake, upTo: Self.duration(wakeAt.timeIntervalSince(now)), on: clock)
            if clock.now() >= refreshAt {
                fromDatabase = await readNextDeadline()
                refreshed = clock.now()
            }
        }
    }

    /// One expiry step; `nil` when it failed (logged).
    private func expireStep() async -> SweepStep? {
        do {
            let step = try await jobs.expireDue()
            step.recordErasures(metrics)
            if step.ran {
                metrics.increment(Metric.expiryDeadlineStepsTotal, labels: ["expired": step.rows > 0 ? "yes" : "no"])
                metrics.increment(Metric.sweepRowsTotal, labels: ["sweep": "expiry"], by: Double(step.rows))
            }
            if step.reports > 0 {
                outboxWake?.signal()
                logger.info("notifications expired at their deadline", metadata: ["deliveries": String(step.rows), "reports": String(step.reports)])
            }
            return step
        } catch {
            logger.warning("expiry at the deadline failed; trying again in a second (the expiry sweep stays the safety net)",
                           metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// The database's earliest deadline not handled yet; `nil` when none or when it could not be read (logged).
    private func readNextDeadline() async -> Date? {
        do {
            return try await jobs.nextDeadline()
        } catch {
            logger.warning("cannot read the next expiry deadline", metadata: ["error": "\(error)"])
            return nil
        }
    }

    private static func duration(_ seconds: TimeInterval) -> Duration {
        .milliseconds(Int64(max(0, min(seconds, 86_400)) * 1000))
    }
}

/// Deadlines noted by this process's sends, for the ``ExpiryWatcher``: made before it (the SOAP
/// service is built first), so a stored send can hand over its deadline at once. Every deadline
/// not yet passed is kept (a min-heap, up to ``capacity``: beyond it a deadline is left to the
/// watcher's next read of the database), so the watcher knows this process's next deadline
/// without asking the database.
package final class DeadlineNotes: Sendable {
    /// Deadlines kept at most.
    package static let capacity = 100_000

    private let heap = Mutex(DeadlineHeap())
    /// Ends the watcher's wait when a deadline is noted.
    let wake = WakeSignal()

    package init() {}

    /// A notification was stored whose deliveries expire at `deadline`.
    package func note(deadline: Date) {
        let kept = heap.withLock { heap -> Bool in
            guard heap.count < Self.capacity else { return false }
            heap.insert(deadline)
            return true
        }
        if kept { wake.signal() }
    }

    /// The earliest deadline noted and not yet removed.
    func earliest() -> Date? {
        heap.withLock { $0.minimum }
    }

    /// Forgets every deadline up to `moment` (their expiry step ran).
    func remove(through moment: Date) {
        heap.withLock { heap in
            while let first = heap.minimum, first <= moment { heap.removeMinimum() }
        }
    }

    /// How many deadlines are kept.
    var count: Int { heap.withLock { $0.count } }
}

/// A binary min-heap of dates.
struct DeadlineHeap: Sendable {
    private var items: [Date] = []

    var count: Int { items.count }
    var minimum: Date? { items.first }

    mutating func insert(_ date: Date) {
        items.append(date)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeMinimum() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < items.count && items[left] < items[smallest] { smallest = left }
            if right < items.count && items[right] < items[smallest] { smallest = right }
            guard smallest != parent else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
