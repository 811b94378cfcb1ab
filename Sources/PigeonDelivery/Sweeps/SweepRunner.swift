import Foundation
import PigeonCore
import PigeonDomain

/// How sweeps are paced: a step that left work behind is followed at once by the next; a
/// finished sweep waits for the interval. Pure, so the pacing is tested without a clock.
enum SweepPacing {
    static func delay(after step: SweepStep, interval: Duration) -> Duration {
        step.ran && step.more ? .zero : interval
    }
}

/// Runs the expiry sweep and subscription hygiene every `interval` until the stop, each as
/// bounded steps (see ``Sweeps``); several gateways may run this, one sweeps at a time.
package struct SweepRunner: Sendable {
    var sweeps: any SweepJobs
    var interval: Duration
    var deviceExpiry: Duration
    var retention: any HistoryKeeping
    var retentionDays: Int
    /// How often partitions are created ahead and aged days dropped.
    var retentionInterval: Duration = .seconds(3600)
    var clock: any DeliveryClock
    var metrics: MetricsRegistry
    var logger: Logger

    package init(sweeps: any SweepJobs, interval: Duration, deviceExpiry: Duration, retention: any HistoryKeeping, retentionDays: Int,
                clock: any DeliveryClock = SystemDeliveryClock(), metrics: MetricsRegistry, logger: Logger) {
        self.sweeps = sweeps
        self.interval = interval
        self.deviceExpiry = deviceExpiry
        self.retention = retention
        self.retentionDays = retentionDays
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    /// Sweeps until `stop` is requested (or the task is cancelled).
    package func run(until stop: GracefulStop = GracefulStop()) async {
        var longest: [String: Duration] = [:]
        var retentionDue = clock.now()
        while !stop.shouldStop {
            await sweep("expiry", stop: stop, longest: &longest) { try await sweeps.expire(notifications: 100, rows: 10_000) }
            // The reach is kept to within ``ReachPrecision``: waiting that much longer than the
            // period, hygiene never removes a device reached within it.
            await sweep("hygiene", stop: stop, longest: &longest) {
                try await sweeps.removeStaleDevices(olderThan: ReachPrecision.hygieneAge(forExpiry: deviceExpiry), limit: 1_000)
            }
            if clock.now() >= retentionDue {
                let wait = await keepHistory() ? retentionInterval : interval
                retentionDue = clock.now().addingTimeInterval(Double(wait.components.seconds))
            }
            await stop.sleep(for: interval, on: clock)
        }
    }

    /// Creates the coming days' partitions and drops the days past `retentionDays`; false when
    /// it failed (tried again at the next sweep interval).
    private func keepHistory() async -> Bool {
        do {
            let now = clock.now()
            let created = try await retention.prepareDays(around: now, daysAhead: 3, lockTimeout: .seconds(1))
            let step = try await retention.dropDays(olderThan: retentionDays, now: now)
            metrics.increment(Metric.retentionTablesDroppedTotal, by: Double(step.dropped.count))
            if created > 0 || !step.dropped.isEmpty {
                logger.info("history kept to retentionDays", metadata: [
                    "created": String(created), "dropped": step.dropped.joined(separator: ","),
                    "retentionDays": String(retentionDays)])
            }
            return true
        } catch {
            logger.warning("retention pass failed; retrying at the next sweep interval", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Runs steps of one sweep until it has nothing left (or the stop).
    private func sweep(_ name: String, stop: GracefulStop, longest: inout [String: Duration], _ step: () async throws -> SweepStep) async {
        var total = 0, reports = 0
        while !stop.shouldStop {
            let result: SweepStep
            let started = ContinuousClock.now
            do {
                result = try await step()
                let took = ContinuousClock.now - started
                if took > longest[name, default: .zero] {
                    longest[name] = took
                    metrics.set(Metric.sweepLongestStepSeconds, labels: ["sweep": name],
                                to: took.inSeconds)
                }
            } catch {
                logger.warning("sweep step failed; retrying at the next interval", metadata: ["sweep": name, "error": "\(error)"])
                return
            }
            total += result.rows
            reports += result.reports
            result.recordErasures(metrics)
            metrics.increment(Metric.sweepRowsTotal, labels: ["sweep": name], by: Double(result.rows))
            if SweepPacing.delay(after: result, interval: interval) != .zero { break }
        }
        if total > 0 {
            logger.info("sweep done", metadata: ["sweep": name, "rows": String(total), "reports": String(reports)])
        }
    }
}
