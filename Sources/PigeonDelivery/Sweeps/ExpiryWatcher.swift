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

    /// Watches until the task is cancelled.
    package func run() async {
        var next = await readNextDeadline()
        var refreshed = clock.now()
        // Steps in a row that found nothing to do although a deadline had passed (another
        // process held the step, or the database's clock is behind ours): waited out with a
        // growing pause, not in a tight loop.
        var idleSteps = 0
        while !Task.isCancelled {
            if let noted = notes.take() {
                next = min(next ?? noted, noted)
            }
            let now = clock.now()
            if let deadline = next, deadline <= now {
                guard let step = await expireStep() else {
                    try? await clock.sleep(for: .seconds(1))
                    continue
                }
                if step.ran && step.more { continue }
                next = await readNextDeadline()
                refreshed = clock.now()
                if step.rows == 0 && step.reports == 0, let deadline = next, deadline <= refreshed {
                    idleSteps += 1
                    try? await clock.sleep(for: .milliseconds(min(5_000, 25 << min(idleSteps, 8))))
                } else {
                    idleSteps = 0
                }
                continue
            }
            let refreshAt = refreshed.addingTimeInterval(refreshInterval.inSeconds)
            let wakeAt = min(next ?? refreshAt, refreshAt)
            await notes.wake.wait(upTo: Self.duration(wakeAt.timeIntervalSince(now)), clock: clock)
            if clock.now() >= refreshAt {
                if let read = await readNextDeadline() { next = min(next ?? read, read) }
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
/// service is built first), so a stored send can hand over its deadline at once.
package final class DeadlineNotes: Sendable {
    /// The earliest deadline noted since the watcher last looked.
    private let earliest = Mutex<Date?>(nil)
    /// Ends the watcher's wait when a deadline is noted.
    let wake = WakeSignal()

    package init() {}

    /// A notification was stored whose deliveries expire at `deadline`.
    package func note(deadline: Date) {
        earliest.withLock { $0 = min($0 ?? deadline, deadline) }
        wake.signal()
    }

    /// The earliest deadline noted since the last call, and forgets it.
    func take() -> Date? {
        earliest.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
