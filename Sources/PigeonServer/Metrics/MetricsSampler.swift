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

    /// Reports `clients`' counters at every scrape.
    static func collect(_ clients: [(service: String, app: String, client: HTTP2Client)], into metrics: MetricsRegistry) {
        metrics.addCollector { metrics in
            for counts in PushClientCounts.summed(clients) {
                let labels = ["service": counts.service, "app": counts.app]
                metrics.set(Metric.pushConnectionsOpened, labels: labels, to: Double(counts.opened))
                metrics.set(Metric.pushTransfersRestarted, labels: labels, to: Double(counts.restarted))
            }
        }
    }

    /// Samples the queue depth until `stop` is requested (or the task is cancelled).
    func run(until stop: GracefulStop = GracefulStop()) async {
        while !stop.shouldStop {
            do {
                metrics.set(Metric.deliveryQueueDepth, to: Double(try await queue.depth()))
                metrics.set(Metric.deliveryOldestDueSeconds, to: try await queue.oldestDueAge())
                let statistics = try await outbox.statistics()
                metrics.set(Metric.outboxDepth, to: Double(statistics.depth))
                metrics.set(Metric.outboxOldestAgeSeconds, to: statistics.oldestAgeSeconds)
                metrics.set(Metric.outboxDeadLetters, to: Double(statistics.dead))
                metrics.set(Metric.databaseUp, to: 1)
            } catch {
                metrics.set(Metric.databaseUp, to: 0)
                logger.debug("cannot sample the queue depth", metadata: ["error": "\(error)"])
            }
            await stop.sleep(for: interval)
        }
    }
}
