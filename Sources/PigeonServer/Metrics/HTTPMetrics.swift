import PigeonCore
import PigeonHTTP

/// The listeners' own counters, read at every scrape.
enum HTTPMetrics {

    static func collect(servers: [(listener: String, server: HTTPServer)], into metrics: MetricsRegistry) {
        metrics.addCollector { metrics in
            for (listener, server) in servers {
                metrics.set(Metric.httpConnections, labels: ["listener": listener], to: Double(server.openConnections))
                metrics.set(Metric.httpRequestsInFlight, labels: ["listener": listener], to: Double(server.requestsInFlight))
                metrics.set(Metric.httpDeadlineClosures, labels: ["listener": listener], to: Double(server.deadlineClosures))
                metrics.set(Metric.httpUnauthenticatedConnections, labels: ["listener": listener], to: Double(server.unauthenticatedConnections))
                metrics.set(Metric.httpUnauthenticatedRefusals, labels: ["listener": listener], to: Double(server.unauthenticatedRefusals))
                metrics.set(Metric.httpUnauthenticatedClosures, labels: ["listener": listener], to: Double(server.unauthenticatedClosures))
                metrics.set(Metric.httpUnauthenticatedEvictions, labels: ["listener": listener], to: Double(server.unauthenticatedEvictions))
                metrics.set(Metric.httpAllowlistRefusals, labels: ["listener": listener], to: Double(server.allowlistRefusals))
                if let expiry = server.certificateExpiry {
                    metrics.set(Metric.tlsCertificateExpiryTimestampSeconds, labels: ["listener": listener], to: expiry.timeIntervalSince1970.rounded())
                }
            }
        }
    }
}
