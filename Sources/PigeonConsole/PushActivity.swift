import Foundation
import PigeonDomain
import PigeonCore
import Synchronization

/// The last hour of push outcomes for the console's overview, from the registry's
/// `pigeon_push_outcomes_total`: a sample a minute of each (service, app, outcome) series, kept
/// 60 minutes; the current minute is read live.
package final class PushActivity: Sendable {
    /// Pushes of one minute by (platform, app), and by outcome.
    package struct Minute: Sendable, Equatable {
        var start: Date
        var byRoute: [String: Double]
        var byOutcome: [String: Double]
        var total: Double { byRoute.values.reduce(0, +) }
    }

    private struct State {
        var last: [String: Double] = [:]
        var lastAt: Date?
        var minutes: [Minute] = []
    }

    package static let keptMinutes = 60
    private let metrics: MetricsRegistry
    private let state = Mutex(State())
    private let clock: @Sendable () -> Date

    package init(metrics: MetricsRegistry, clock: @escaping @Sendable () -> Date = Date.init) {
        self.metrics = metrics
        self.clock = clock
    }

    /// Samples once a minute until `stop` is requested (or the task is cancelled).
    package func run(until stop: GracefulStop = GracefulStop()) async {
        while !stop.shouldStop {
            sample()
            await stop.sleep(for: .seconds(60))
        }
    }

    /// Closes the minute since the last sample.
    package func sample() {
        let now = clock()
        let current = Self.read(metrics)
        state.withLock { state in
            if let since = state.lastAt {
                state.minutes.append(Self.delta(from: state.last, to: current, start: since))
                if state.minutes.count > Self.keptMinutes { state.minutes.removeFirst(state.minutes.count - Self.keptMinutes) }
            }
            state.last = current
            state.lastAt = now
        }
    }

    /// The kept minutes, oldest first, and the minute under way.
    package func lastHour() -> [Minute] {
        let current = Self.read(metrics)
        return state.withLock { state in
            state.minutes + [Self.delta(from: state.last, to: current, start: state.lastAt ?? clock())]
        }
    }

    /// Series keys `platform\u{1F}app\u{1F}outcome` and their totals.
    private static func read(_ metrics: MetricsRegistry) -> [String: Double] {
        var totals: [String: Double] = [:]
        for series in metrics.counters(of: .pushOutcomesTotal) {
            let key = [series.labels["platform"] ?? "?", series.labels["app"] ?? "?", series.labels["outcome"] ?? "?"].joined(separator: "\u{1F}")
            totals[key, default: 0] += series.value
        }
        return totals
    }

    private static func delta(from before: [String: Double], to after: [String: Double], start: Date) -> Minute {
        var minute = Minute(start: start, byRoute: [:], byOutcome: [:])
        for (key, value) in after {
            let change = value - (before[key] ?? 0)
            guard change > 0 else { continue }
            let parts = key.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
            minute.byRoute["\(parts[0]) / \(parts[1])", default: 0] += change
            minute.byOutcome[parts[2], default: 0] += change
        }
        return minute
    }
}
