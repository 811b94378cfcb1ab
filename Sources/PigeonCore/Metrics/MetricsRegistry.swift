import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Counters, gauges and histograms rendered in the Prometheus text format. Labels are bounded
/// sets chosen by the code (route templates, states, platforms), never request data.
///
/// Updates land in one of several shards picked by the calling thread, so dozens of connection
/// threads recording every request do not queue on one lock; ``render()`` sums the shards.
package final class MetricsRegistry: Sendable {
    /// Upper bounds, in seconds, of latency histogram buckets.
    package static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// A metric name and its labels, kept as a flat, key-sorted list so hashing is one pass
    /// (a dictionary's order-independent hash costs a hasher per element).
    private struct Series: Hashable, Comparable {
        var name: String
        var labels: [String]

        init(name: String, labels: [String: String]) {
            self.name = name
            var flat: [String] = []
            flat.reserveCapacity(labels.count * 2)
            for key in labels.keys.sorted() {
                flat.append(key)
                flat.append(labels[key] ?? "")
            }
            self.labels = flat
        }

        init(name: String, flatLabels: [String]) {
            self.name = name
            self.labels = flatLabels
        }

        /// The labels as a dictionary, for rendering.
        var labelDictionary: [String: String] {
            var dictionary: [String: String] = [:]
            var index = 0
            while index + 1 < labels.count {
                dictionary[labels[index]] = labels[index + 1]
                index += 2
            }
            return dictionary
        }

        var rendered: String {
            guard !labels.isEmpty else { return name }
            var pairs: [String] = []
            var index = 0
            while index + 1 < labels.count {
                pairs.append("\(labels[index])=\"\(Self.escape(labels[index + 1]))\"")
                index += 2
            }
            return "\(name){\(pairs.joined(separator: ","))}"
        }

        static func < (lhs: Series, rhs: Series) -> Bool { lhs.rendered < rhs.rendered }

        static func escape(_ value: String) -> String {
            value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
        }
    }

    private struct Histogram {
        var buckets: [Int]
        var count = 0
        var sum = 0.0
    }

    private struct State {
        var help: [String: (type: String, text: String)] = [:]
        var counters: [Series: Double] = [:]
        var gauges: [Series: Double] = [:]
        var histograms: [Series: Histogram] = [:]
    }

    private final class Shard: Sendable {
        let state = Mutex(State())
    }

    private static let shardCount = 16
    private let shards: [Shard] = (0..<MetricsRegistry.shardCount).map { _ in Shard() }

    /// Called before each render to set gauges read from elsewhere (counters other code keeps).
    private let collectors = Mutex<[@Sendable (MetricsRegistry) -> Void]>([])

    package init() {}

    /// Adds a collector: `collect` runs before every render and sets gauges; it must be cheap
    /// (no I/O).
    package func addCollector(_ collect: @escaping @Sendable (MetricsRegistry) -> Void) {
        collectors.withLock { $0.append(collect) }
    }

    /// The calling thread's shard.
    private var shard: Shard {
        // Thread handles are far apart and aligned; mix the bits before taking the remainder.
        var mixed = UInt64(UInt(pthread_self()))
        mixed = (mixed ^ (mixed >> 33)) &* 0xff51_afd7_ed55_8ccd
        mixed ^= mixed >> 33
        return shards[Int(mixed % UInt64(Self.shardCount))]
    }

    /// Declares the families' types and help texts: they are announced from the first scrape,
    /// sampled or not.
    package func describe(_ metrics: [Metric]) {
        shards[0].state.withLock { state in
            for metric in metrics { state.help[metric.name] = (metric.kind.rawValue, metric.help) }
        }
    }

    /// Adds `amount` to a counter's series.
    package func increment(_ metric: Metric, labels: [String: String] = [:], by amount: Double = 1) {
        assert(metric.kind == .counter, "\(metric.name) is a \(metric.kind), not a counter")
        let series = Series(name: metric.name, labels: labels)
        shard.state.withLock { $0.counters[series, default: 0] += amount }
    }

    /// Sets a gauge (kept in the first shard: gauges are set, not summed).
    /// A counter may be set too when its running total is kept elsewhere and read at each
    /// scrape (the process's CPU time).
    package func set(_ metric: Metric, labels: [String: String] = [:], to value: Double) {
        assert(metric.kind != .histogram, "\(metric.name) is a histogram: observe it")
        let series = Series(name: metric.name, labels: labels)
        shards[0].state.withLock { $0.gauges[series] = value }
    }

    /// Records one observation (seconds) in a histogram with ``latencyBuckets``.
    package func observe(_ metric: Metric, labels: [String: String] = [:], _ value: Double) {
        assert(metric.kind == .histogram, "\(metric.name) is a \(metric.kind), not a histogram")
        let series = Series(name: metric.name, labels: labels)
        let bucket = Self.latencyBuckets.firstIndex { value <= $0 }
        shard.state.withLock { state in
            var histogram = state.histograms[series] ?? Histogram(buckets: Array(repeating: 0, count: Self.latencyBuckets.count))
            if let bucket { histogram.buckets[bucket] += 1 }
            histogram.count += 1
            histogram.sum += value
            state.histograms[series] = histogram
        }
    }

    /// Records several observations of one series at once (a batch's latencies): one lookup.
    package func observe(_ metric: Metric, labels: [String: String] = [:], values: [Double]) {
        assert(metric.kind == .histogram, "\(metric.name) is a \(metric.kind), not a histogram")
        guard !values.isEmpty else { return }
        let series = Series(name: metric.name, labels: labels)
        shard.state.withLock { state in
            var histogram = state.histograms[series] ?? Histogram(buckets: Array(repeating: 0, count: Self.latencyBuckets.count))
            for value in values {
                if let bucket = Self.latencyBuckets.firstIndex(where: { value <= $0 }) { histogram.buckets[bucket] += 1 }
                histogram.count += 1
                histogram.sum += value
            }
            state.histograms[series] = histogram
        }
    }

    /// The current value of a counter (for tests and the status of background work).
    package func counter(_ metric: Metric, labels: [String: String] = [:]) -> Double {
        let series = Series(name: metric.name, labels: labels)
        return shards.reduce(0) { total, shard in total + shard.state.withLock { $0.counters[series] ?? 0 } }
    }

    /// Every series of the counter `metric`, by its labels (summed over the shards).
    package func counters(of metric: Metric) -> [(labels: [String: String], value: Double)] {
        snapshot().counters.filter { $0.key.name == metric.name }.map { ($0.key.labelDictionary, $0.value) }
    }

    /// The current value of a gauge, if it was ever set.
    package func gauge(_ metric: Metric, labels: [String: String] = [:]) -> Double? {
        let series = Series(name: metric.name, labels: labels)
        return shards.first?.state.withLock { $0.gauges[series] }
    }

    /// All shards added together.
    private func snapshot() -> State {
        var merged = State()
        for shard in shards {
            let state = shard.state.withLock { $0 }
            merged.help.merge(state.help) { old, _ in old }
            merged.counters.merge(state.counters, uniquingKeysWith: +)
            merged.gauges.merge(state.gauges) { old, _ in old }
            merged.histograms.merge(state.histograms) { left, right in
                Histogram(buckets: zip(left.buckets, right.buckets).map(+), count: left.count + right.count, sum: left.sum + right.sum)
            }
        }
        return merged
    }

    /// Every series in the Prometheus text exposition format, version 0.0.4.
    package func render() -> String {
        for collect in collectors.withLock({ $0 }) { collect(self) }
        let snapshot = snapshot()
        var out = ""
        var described: Set<String> = []
        func header(_ name: String) {
            guard described.insert(name).inserted, let help = snapshot.help[name] else { return }
            out += "# HELP \(name) \(help.text)\n# TYPE \(name) \(help.type)\n"
        }
        for (series, value) in snapshot.counters.sorted(by: { $0.key < $1.key }) {
            header(series.name)
            out += "\(series.rendered) \(Self.format(value))\n"
        }
        for (series, value) in snapshot.gauges.sorted(by: { $0.key < $1.key }) {
            header(series.name)
            out += "\(series.rendered) \(Self.format(value))\n"
        }
        for (series, histogram) in snapshot.histograms.sorted(by: { $0.key < $1.key }) {
            header(series.name)
            var cumulative = 0
            for (index, bound) in Self.latencyBuckets.enumerated() {
                cumulative += histogram.buckets[index]
                var labels = series.labelDictionary
                labels["le"] = Self.format(bound)
                out += "\(Series(name: series.name + "_bucket", labels: labels).rendered) \(cumulative)\n"
            }
            var labels = series.labelDictionary
            labels["le"] = "+Inf"
            out += "\(Series(name: series.name + "_bucket", labels: labels).rendered) \(histogram.count)\n"
            out += "\(Series(name: series.name + "_sum", flatLabels: series.labels).rendered) \(Self.format(histogram.sum))\n"
            out += "\(Series(name: series.name + "_count", flatLabels: series.labels).rendered) \(histogram.count)\n"
        }
        // Families without a sample yet are announced too, so dashboards and alert rules find
        // every metric from the first scrape.
        for name in snapshot.help.keys.sorted() { header(name) }
        return out
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
