import Foundation
import OutboundHTTP
import PigeonCore
import PigeonStore
import PushCore
import PushTransport

/// Metrics not counted as they happen: the HTTP/2 clients' connection and restart counters, read
/// at every scrape, and the delivery queue's and the outbox's depth, queried every `interval` (a
/// scrape never waits on the database).
struct MetricsSampler: Sendable {
    var queue: DeliveryQueue
    var outbox: Outbox
    var metrics: MetricsRegistry
    var logger: Logger
    var interval: Duration = .seconds(5)

    static func describe(_ metrics: MetricsRegistry) {
        metrics.describe("pigeon_delivery_queue_depth", type: "gauge", help: "QUEUED deliveries (due now or waiting for a retry), sampled every 5 s.")
        metrics.describe("pigeon_delivery_oldest_due_seconds", type: "gauge", help: "How long the longest-waiting due delivery has been due (0: none), sampled every 5 s.")
        metrics.describe("pigeon_database_up", type: "gauge", help: "1 when the last sample's queries reached the database, else 0; sampled every 5 s.")
        metrics.describe("pigeon_outbox_depth", type: "gauge", help: "Reports waiting for the bank, sampled every 5 s.")
        metrics.describe("pigeon_outbox_oldest_age_seconds", type: "gauge", help: "Age of the oldest report waiting for the bank, sampled every 5 s.")
        metrics.describe("pigeon_outbox_dead_letters", type: "gauge", help: "Reports dead-lettered after reportMaxAgeHours (pigeon outbox list), sampled every 5 s.")
        metrics.describe("pigeon_push_connections_opened", type: "gauge", help: "HTTP/2 connections opened to each push service since start.")
        metrics.describe("pigeon_push_transfers_restarted", type: "gauge", help: "Pushes sent again on a fresh connection after a GOAWAY or reset stream, since start.")
    }

    /// Reports `clients`' counters at every scrape.
    static func collect(_ clients: [(service: String, app: String, client: HTTP2Client)], into metrics: MetricsRegistry) {
        metrics.addCollector { metrics in
            for counts in PushClientCounts.summed(clients) {
                let labels = ["service": counts.service, "app": counts.app]
                metrics.set("pigeon_push_connections_opened", labels: labels, to: Double(counts.opened))
                metrics.set("pigeon_push_transfers_restarted", labels: labels, to: Double(counts.restarted))
            }
        }
    }

    /// Samples the queue depth until cancelled.
    func run() async {
        while !Task.isCancelled {
            do {
                metrics.set("pigeon_delivery_queue_depth", to: Double(try await queue.depth()))
                metrics.set("pigeon_delivery_oldest_due_seconds", to: try await queue.oldestDueAge())
                let statistics = try await outbox.statistics()
                metrics.set("pigeon_outbox_depth", to: Double(statistics.depth))
                metrics.set("pigeon_outbox_oldest_age_seconds", to: statistics.oldestAgeSeconds)
                metrics.set("pigeon_outbox_dead_letters", to: Double(statistics.dead))
                metrics.set("pigeon_database_up", to: 1)
            } catch {
                metrics.set("pigeon_database_up", to: 0)
                logger.debug("cannot sample the queue depth", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
