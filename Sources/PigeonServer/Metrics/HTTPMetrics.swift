import PigeonCore
import PigeonHTTP

/// The listeners' own counters, read at every scrape.
enum HTTPMetrics {
    static func describe(_ metrics: MetricsRegistry) {
        metrics.describe("pigeon_http_connections", type: "gauge", help: "Open connections per listener.")
        metrics.describe("pigeon_http_requests_in_flight", type: "gauge", help: "Requests whose handler is running, per listener.")
        metrics.describe("pigeon_http_deadline_closures", type: "gauge", help: "Connections closed because a whole request did not arrive within requestDeadlineSeconds, since start.")
        metrics.describe("pigeon_http_unauthenticated_refusals", type: "gauge", help: "Connections refused at accept because the listener's unauthenticated connections (of that address, or in all) were at their cap, since start.")
        metrics.describe("pigeon_http_unauthenticated_closures", type: "gauge", help: "Connections cut because they sent no head that passed the checks within 5 s of opening, since start.")
        metrics.describe("pigeon_tls_certificate_expiry_timestamp_seconds", type: "gauge", help: "When the certificate an HTTPS listener presents expires (Unix time), per listener.")
    }

    static func collect(servers: [(listener: String, server: HTTPServer)], into metrics: MetricsRegistry) {
        metrics.addCollector { metrics in
            for (listener, server) in servers {
                metrics.set("pigeon_http_connections", labels: ["listener": listener], to: Double(server.openConnections))
                metrics.set("pigeon_http_requests_in_flight", labels: ["listener": listener], to: Double(server.requestsInFlight))
                metrics.set("pigeon_http_deadline_closures", labels: ["listener": listener], to: Double(server.deadlineClosures))
                metrics.set("pigeon_http_unauthenticated_refusals", labels: ["listener": listener], to: Double(server.unauthenticatedRefusals))
                metrics.set("pigeon_http_unauthenticated_closures", labels: ["listener": listener], to: Double(server.unauthenticatedClosures))
                if let expiry = server.certificateExpiry {
                    metrics.set("pigeon_tls_certificate_expiry_timestamp_seconds", labels: ["listener": listener], to: expiry.timeIntervalSince1970.rounded())
                }
            }
        }
    }
}
