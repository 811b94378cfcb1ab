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

    static func describe(_ metrics: MetricsRegistry) {
        metrics.describe("pigeon_sweep_rows_total", type: "counter", help: "Rows changed by sweeps: deliveries expired, devices deleted.")
        metrics.describe("pigeon_sweep_longest_step_seconds", type: "gauge", help: "The longest single sweep transaction since start.")
    }

    func run() async {
        var longest: [String: Duration] = [:]
        while !Task.isCancelled {
            await sweep("expiry", longest: &longest) { try await sweeps.expire() }
            await sweep("hygiene", longest: &longest) { try await sweeps.removeStaleDevices(olderThan: deviceExpiry) }
            try? await Task.sleep(for: interval)
        }
    }

    /// Runs steps of one sweep until it has nothing left (or is cancelled).
    private func sweep(_ name: String, longest: inout [String: Duration], _ step: () async throws -> SweepStep) async {
        var total = 0, reports = 0
        while !Task.isCancelled {
            let result: SweepStep
            let started = ContinuousClock.now
            do {
                result = try await step()
                let took = ContinuousClock.now - started
                if took > longest[name, default: .zero] {
                    longest[name] = took
                    metrics.set("pigeon_sweep_longest_step_seconds", labels: ["sweep": name],
                                to: Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
                }
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
