import Foundation
@testable import PigeonCore
import Testing
import PigeonTestSupport

/// The metric catalogue against itself and against what operators read: the Grafana board and
/// the alert rules in `deploy/` may name only metrics the gateway exports.
@Suite("Metric catalogue", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct MetricCatalogueTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("names are unique Prometheus names under pigeon_ (or process_, the standard ones); counters end in _total, histograms in a unit")
    func wellFormed() {
        let names = Metric.catalogue.map(\.name)
        #expect(Set(names).count == names.count)
        for metric in Metric.catalogue {
            #expect(metric.name.wholeMatch(of: /(pigeon|process)_[a-z0-9_]+/) != nil, "\(metric.name)")
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

    @Test("every alert has a runbook_url naming its own section of docs/runbook.md, and every section an alert")
    func runbooks() throws {
        let rules = try String(contentsOf: Self.repository.appendingPathComponent("deploy/prometheus/pigeon-alerts.yml"), encoding: .utf8)
        let runbook = try String(contentsOf: Self.repository.appendingPathComponent("docs/runbook.md"), encoding: .utf8)
        let alerts = rules.matches(of: /- alert: (\w+)/).map { String($0.output.1) }
        let links = rules.matches(of: /runbook_url: "docs\/runbook\.md#([a-z0-9-]+)"/).map { String($0.output.1) }
        let sections = runbook.matches(of: /\n## (\w+)\n/).map { String($0.output.1) }
        #expect(alerts.count >= 12)
        #expect(links == alerts.map { $0.lowercased() }, "each alert, in order, links its own section")
        #expect(Set(sections) == Set(alerts), "sections without an alert: \(Set(sections).subtracting(alerts)); alerts without a section: \(Set(alerts).subtracting(sections))")
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

    @Test("the process's figures are read from /proc/self/stat (a name with spaces and parentheses too) and /proc/stat")
    func processFigures() throws {
        let stat = "4242 (pigeon (serve) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 9 0 12345 1000000 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 0 0 0 0 0 0"
        let sample = try #require(ProcessMetrics.parse(stat: stat, systemStat: "cpu  1 2 3\nbtime 1800000000\nprocesses 9\n",
                                                       openFileDescriptors: 37, ticksPerSecond: 100, pageSize: 4096))
        #expect(sample == ProcessMetrics.Sample(cpuSeconds: 3, residentBytes: 2560 * 4096, startTimeSeconds: 1_800_000_123.45, openFileDescriptors: 37))
        #expect(ProcessMetrics.parse(stat: "garbage", systemStat: "", openFileDescriptors: 0, ticksPerSecond: 100, pageSize: 4096) == nil)
        // This process, live: plausible figures, rendered under the standard names.
        let live = try #require(ProcessMetrics.read())
        #expect(live.residentBytes > 1_000_000 && live.openFileDescriptors >= 3 && live.cpuSeconds > 0)
        #expect(abs(live.startTimeSeconds - Date().timeIntervalSince1970) < 86_400)
        let registry = MetricsRegistry()
        registry.describe(Metric.catalogue)
        ProcessMetrics.collect(into: registry)
        let text = registry.render()
        #expect(text.contains("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "))
        #expect(text.contains("\nprocess_open_fds "))
    }
}
