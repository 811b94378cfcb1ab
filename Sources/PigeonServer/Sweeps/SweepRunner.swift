import Foundation
import PigeonCore
import PigeonStore

/// How sweeps are paced: a step that left work behind is followed at once by the next; a
/// finished sweep waits for the interval. Pure, so the pacing is tested without a clock.
enum SweepPacing {
    static func delay(after step: SweepStep, interval: Duration) -> Duration {
        step.ran && step.more ? .zero : interval
    }
}

/// Runs the expiry sweep and subscription hygiene every `interval` until cancelled, each as
/// bounded steps (see ``Sweeps``); several gateways may run this, one sweeps at a time.
struct SweepRunner: Sendable {
    var sweeps: Sweeps
    var interval: Duration
    var deviceExpiry: Duration
    var metrics: MetricsRegistry
    var logger: Logger

    func run() async {
        while !Task.isCancelled {
            await sweep("expiry") { try await sweeps.expire() }
            await sweep("hygiene") { try await sweeps.removeStaleDevices(olderThan: deviceExpiry) }
            try? await Task.sleep(for: interval)
        }
    }

    /// Runs steps of one sweep until it has nothing left (or is cancelled).
    private func sweep(_ name: String, _ step: () async throws -> SweepStep) async {
        var total = 0, reports = 0
        while !Task.isCancelled {
            let result: SweepStep
            do {
                result = try await step()
            } catch {
                logger.warning("sweep step failed; retrying at the next interval", metadata: ["sweep": name, "error": "\(error)"])
                return
            }
            total += result.rows
            reports += result.reports
            metrics.increment("pigeon_sweep_rows_total", labels: ["sweep": name], by: Double(result.rows))
            if SweepPacing.delay(after: result, interval: interval) != .zero { break }
        }
        if total > 0 {
            logger.info("sweep done", metadata: ["sweep": name, "rows": String(total), "reports": String(reports)])
        }
    }
}
