import Foundation
import PigeonCore
import PigeonHTTP
import PigeonStore

/// Maps requests to endpoints, enforces authentication and body limits, and records request
/// metrics by route template.
struct Router: Sendable {
    let inbound: InboundEndpoint
    let devices: DeviceEndpoint
    let outboundWSDL: OutboundWSDL
    let health: HealthEndpoint
    let metrics: MetricsRegistry
    let soapAuthentication: BasicAuthentication?
    let scheme: String
    let maxRequestBytes: Int
    let logger: Logger

    /// Methods reported as themselves in metrics; anything else is `OTHER`, so a client cannot
    /// create unbounded label values.
    static let knownMethods: Set<String> = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let started = ContinuousClock.now
        let (route, response) = await route(request)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let method = Self.knownMethods.contains(request.method) ? request.method : "OTHER"
        metrics.increment("pigeon_http_requests_total", labels: ["route": route, "method": method, "status": String(response.status)])
        metrics.observe("pigeon_http_request_duration_seconds", labels: ["route": route], seconds)
        logger.debug("\(request.method) \(request.path) → \(response.status)", metadata: ["peer": request.peer])
        return response
    }

    private func route(_ request: HTTPRequest) async -> (String, HTTPResponse) {
        switch request.path {
        case InboundEndpoint.path, InboundEndpoint.path + "/":
            let route = "soap_inbound"
            if let soapAuthentication, !soapAuthentication.accepts(request.header("authorization")) {
                var response = HTTPResponse.text(401, "authentication required\n")
                response.headers.append(("WWW-Authenticate", "Basic realm=\"pigeon\""))
                return (route, response)
            }
            if request.bodyTooLarge { return (route, tooLarge()) }
            switch request.method {
            case "GET" where request.hasQueryArgument("wsdl"):
                return ("soap_inbound_wsdl", inbound.describe(request, scheme: scheme))
            case "POST":
                return (route, await inbound.call(request))
            default:
                return (route, methodNotAllowed("POST, or GET with ?wsdl"))
            }
        case OutboundWSDL.path:
            guard request.method == "GET", request.hasQueryArgument("wsdl") else {
                return ("soap_outbound_wsdl", .text(404, "the bank proxy's service is described here (GET ?wsdl); it is served by the bank\n"))
            }
            return ("soap_outbound_wsdl", outboundWSDL.response())
        case let path where path.hasPrefix(DeviceEndpoint.prefix):
            if request.bodyTooLarge { return ("api", tooLarge()) }
            return await devices.handle(request)
        case "/health":
            return ("health", request.method == "GET" ? health.live() : methodNotAllowed("GET"))
        case "/ready":
            return ("ready", request.method == "GET" ? await health.ready() : methodNotAllowed("GET"))
        case "/metrics":
            return ("metrics", request.method == "GET"
                ? .text(200, metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
                : methodNotAllowed("GET"))
        default:
            if request.bodyTooLarge { return ("unknown", tooLarge()) }
            return ("unknown", .text(404, "no such resource: \(request.path.prefix(200))\n"))
        }
    }

    private func tooLarge() -> HTTPResponse {
        .text(413, "request body larger than maxRequestBytes (\(maxRequestBytes) bytes)\n")
    }

    private func methodNotAllowed(_ allowed: String) -> HTTPResponse {
        var response = HTTPResponse.text(405, "method not allowed; use \(allowed)\n")
        response.headers.append(("Allow", allowed.hasPrefix("POST") ? "GET, POST" : "GET"))
        return response
    }
}
