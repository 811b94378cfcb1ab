import Foundation
import PigeonCore
import Testing

/// The metric catalogue against itself and against what operators read: the Grafana board and
/// the alert rules in `deploy/` may name only metrics the gateway exports.
@Suite("Metric catalogue")
struct MetricCatalogueTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("names are unique Prometheus names under pigeon_; counters end in _total, histograms in a unit")
    func wellFormed() {
        let names = Metric.catalogue.map(\.name)
        #expect(Set(names).count == names.count)
        for metric in Metric.catalogue {
            #expect(metric.name.wholeMatch(of: /pigeon_[a-z0-9_]+/) != nil, "\(metric.name)")
            #expect(!metric.help.isEmpty && !metric.help.contains("\n"), "\(metric.name)")
            switch metric.kind {
            case .counter: #expect(metric.name.hasSuffix("_total"), "\(metric.name)")
            case .histogram: #expect(metric.name.hasSuffix("_seconds"), "\(metric.name)")
            case .gauge: #expect(!metric.name.hasSuffix("_total"), "\(metric.name)")
            }
        }
    }

    @Test("every metric the dashboard and the alert rules name is in the catalogue")
    func deployNamesExist() throws {
        let exported = Set(Metric.catalogue.map(\.name))
        var named: Set<String> = []
        for file in ["deploy/grafana/pigeon-dashboard.json", "deploy/prometheus/pigeon-alerts.yml"] {
            let text = try String(contentsOf: Self.repository.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /\bpigeon_[a-z0-9_]+/) {
                named.insert(String(match.output).replacing(/_(bucket|sum|count)$/, with: ""))
            }
        }
        #expect(named.count >= 15)
        #expect(named.subtracting(exported).isEmpty, "named in deploy/ but not exported: \(named.subtracting(exported).sorted())")
    }

    @Test("a registry announces every described family from the first render, sampled or not")
    func announced() {
        let registry = MetricsRegistry()
        registry.describe(Metric.catalogue)
        registry.increment(.deliveriesTotal, labels: ["state": "SENT"])
        let text = registry.render()
        for metric in Metric.catalogue {
            #expect(text.contains("# TYPE \(metric.name) \(metric.kind.rawValue)\n"), "\(metric.name)")
        }
        #expect(text.contains("pigeon_deliveries_total{state=\"SENT\"} 1\n"))
        #expect(registry.counter(.deliveriesTotal, labels: ["state": "SENT"]) == 1)
    }
}
