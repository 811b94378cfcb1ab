import Foundation
import PigeonBankService
import PigeonConsole
import PigeonCore
import PigeonDeviceAPI
import PigeonHTTP
import PigeonStore
import PigeonWallet

/// Maps requests to endpoints for one listener, enforces authentication and body limits, and
/// records request metrics by route template.
///
/// A listener serves one or both surfaces (CONTRACT §5): `devices` (the device API, the PassKit
/// web service and `/health`, facing phones) and `bank` (the SOAP service, both WSDLs,
/// `/metrics`, `/ready`, `/health` and, when configured, the console, facing the bank and
/// operators). A path of the other surface is answered 404, exactly as an
/// unknown one.
struct Router: Sendable {
    /// What a listener serves.
    struct Surfaces: OptionSet, Sendable {
        let rawValue: Int
        static let devices = Surfaces(rawValue: 1)
        static let bank = Surfaces(rawValue: 2)
    }

    let surfaces: Surfaces
    let inbound: InboundEndpoint
    let devices: DeviceEndpoint
    let passKit: PassKitEndpoint
    /// The operator console, on the bank surface when configured.
    let console: ConsoleEndpoint?
    let outboundWSDL: OutboundWSDL
    let health: HealthEndpoint
    let metrics: MetricsRegistry
    let soapAuthentication: BasicAuthentication?
    /// Failed SOAP sign-ins (wrong credentials) per client address and user name, and minute
    /// (``RequestSide`` makes it, on the clock it was given). Past it a wrong guess is answered
    /// 429 after ``soapFailureDelay`` on a closed connection; the right credentials always pass,
    /// from any address.
    let soapFailures: AddressRateLimit
    /// How long a wrong guess past the limit waits for its 429.
    var soapFailureDelay: Duration = .seconds(1)
    /// Wrong guesses waiting out their delay at once, at most; beyond it they are answered at
    /// once (still 429, still closed), so a flood of guesses holds no more handlers than this.
    let soapFailureWaits = ConcurrencyLimit(16)
    /// Keeps the warnings about failed SOAP sign-ins to one every ten seconds.
    let soapFailureLog = LogThrottle(interval: 10)
    let scheme: String
    let maxRequestBytes: Int
    let logger: Logger

    /// Methods reported as themselves in metrics; anything else is `OTHER`, so a client cannot
    /// create unbounded label values.
    static let knownMethods: Set<String> = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]

    /// The request headers this router's endpoints read, for its listener to copy (and no
    /// others): its own (the request id, SOAP credentials) and those of each endpoint it serves.
    var requestHeaders: Set<String> {
        var headers: Set<String> = ["x-request-id", "authorization"]
        if surfaces.contains(.bank) {
            headers.formUnion(InboundEndpoint.requestHeaders)
            if console != nil { headers.formUnion(ConsoleEndpoint.requestHeaders) }
        }
        if surfaces.contains(.devices) {
            headers.formUnion(DeviceEndpoint.requestHeaders)
            headers.formUnion(PassKitEndpoint.requestHeaders)
        }
        return headers
    }

    /// How much body a request may send, from its head: the device API's small bodies, SOAP's
    /// `maxRequestBytes` only once the credentials are right, nothing elsewhere.
    func admit(_ head: HTTPRequestHead) -> HTTPServer.BodyAdmission {
        if surfaces.contains(.bank), head.path == InboundEndpoint.path || head.path == InboundEndpoint.path + "/" {
            if let soapAuthentication, !soapAuthentication.accepts(head.authorization) {
                // No credentials is a client asking for the challenge (it may be the bank's, about
                // to send them on this connection); wrong ones mark the connection for cutting first.
                return head.authorization == nil ? .refuse : .refuseWrongCredentials
            }
            // The bank's credentials (or no SOAP authentication, on loopback): the connection is
            // the bank's, and no crowd of unauthenticated ones can take its place.
            return .acceptAuthenticated(maxBytes: maxRequestBytes)
        }
        if surfaces.contains(.devices), head.path.hasPrefix(DeviceEndpoint.prefix) {
            return .accept(maxBytes: JSONFields.maximumBodyBytes)
        }
        if surfaces.contains(.bank), let console, console.serves(head.path) {
            return .accept(maxBytes: head.method == "POST" ? ConsoleEndpoint.maximumBodyBytes : 0)
        }
        if surfaces.contains(.devices), passKit.serves(head.path) {
            return .accept(maxBytes: passKit.maximumBody(head))
        }
        return .accept(maxBytes: 0)
    }

    /// Answers `request` with its id (`X-Request-Id`, the client's when it sent a plain one) on
    /// the answer and on every log line written while it is handled.
    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let id = RequestContext.id(offered: request.header("x-request-id"))
        return await RequestContext.$id.withValue(id) {
            let started = ContinuousClock.now
            var (route, response) = await route(request)
            let elapsed = ContinuousClock.now - started
            let seconds = elapsed.inSeconds
            let method = Self.knownMethods.contains(request.method) ? request.method : "OTHER"
            metrics.increment(Metric.httpRequestsTotal, labels: ["route": route, "method": method, "status": String(response.status)])
            metrics.observe(Metric.httpRequestDurationSeconds, labels: ["route": route], seconds)
            logger.debug("\(LogText.escaped(request.method)) \(LogText.escaped(request.path, limit: 200)) → \(response.status)", metadata: [
                "peer": request.peer, "route": route, "milliseconds": String(format: "%.1f", seconds * 1000)])
            response.headers.append(("X-Request-Id", id))
            return response
        }
    }

    private func route(_ request: HTTPRequest) async -> (String, HTTPResponse) {
        if surfaces.contains(.bank), let answer = await bankRoute(request) { return answer }
        if surfaces.contains(.devices), request.path.hasPrefix(DeviceEndpoint.prefix) {
            if request.bodyTooLarge {
                return ("api", APIError(413, "BODY_TOO_LARGE", "request bodies of the device API are at most \(JSONFields.maximumBodyBytes) bytes").response)
            }
            return await devices.handle(request)
        }
        if surfaces.contains(.devices), passKit.serves(request.path) {
            return await passKit.handle(request)
        }
        if request.path == "/health" {
            if request.bodyTooLarge { return ("health", HTTPResponse.text(413, "this resource takes no request body\n")) }
            return ("health", request.method == "GET" ? health.live() : methodNotAllowed("GET"))
        }
        return ("unknown", .text(404, "no such resource\n"))
    }

    /// The bank surface's routes; nil for a path it does not serve.
    private func bankRoute(_ request: HTTPRequest) async -> (String, HTTPResponse)? {
        if let console, console.serves(request.path) { return await console.handle(request) }
        switch request.path {
        case InboundEndpoint.path, InboundEndpoint.path + "/":
            let route = "soap_inbound"
            if let soapAuthentication, !soapAuthentication.accepts(request.header("authorization")) {
                return (route, await refuseSignIn(request))
            }
            if request.bodyTooLarge {
                return (route, HTTPResponse.text(413, "request body larger than maxRequestBytes (\(maxRequestBytes) bytes)\n"))
            }
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
        case "/ready":
            return ("ready", request.method == "GET" ? await health.ready() : methodNotAllowed("GET"))
        case "/metrics":
            return ("metrics", request.method == "GET"
                ? .text(200, metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
                : methodNotAllowed("GET"))
        default:
            return nil
        }
    }

    /// A SOAP call without the right credentials.
    ///
    /// Without an `Authorization` header it is how many clients ask (a browser opening `?wsdl`,
    /// .NET and Java's `Authenticator` send Basic only after a challenge): 401 with the
    /// challenge, not counted. With wrong credentials it is counted per address and user name;
    /// past 10 a minute the answer is 429, a second late, with the connection closed, so each
    /// further guess costs a new connection and a second. Nothing here ever refuses the right
    /// credentials: they pass before this is reached.
    private func refuseSignIn(_ request: HTTPRequest) async -> HTTPResponse {
        guard let authorization = request.header("authorization") else {
            metrics.increment(Metric.soapSignInFailuresTotal, labels: ["reason": "no_credentials"])
            return Self.challenge
        }
        let user = BasicAuthentication.username(authorization) ?? "?"
        guard let retry = soapFailures.take(request.peer, credential: user) else {
            metrics.increment(Metric.soapSignInFailuresTotal, labels: ["reason": "wrong_credentials"])
            if let suppressed = soapFailureLog.admit() {
                logger.warning("SOAP call refused: wrong Basic credentials", metadata: [
                    "peer": request.peer, "user": LogText.escaped(user, limit: 64), "suppressedSinceLast": String(suppressed)])
            }
            return Self.challenge
        }
        metrics.increment(Metric.soapSignInFailuresTotal, labels: ["reason": "limited"])
        if soapFailureDelay > .zero, soapFailureWaits.tryAcquire() {
            try? await Task.sleep(for: soapFailureDelay)
            soapFailureWaits.release()
        }
        var response = HTTPResponse.text(429, "too many failed sign-ins for this user from this address; try again later\n")
        response.headers.append(("Retry-After", String(retry)))
        response.headers.append(("Connection", "close"))
        return response
    }

    private static var challenge: HTTPResponse {
        var response = HTTPResponse.text(401, "authentication required\n")
        response.headers.append(("WWW-Authenticate", "Basic realm=\"pigeon\""))
        return response
    }

    private func methodNotAllowed(_ allowed: String) -> HTTPResponse {
        var response = HTTPResponse.text(405, "method not allowed; use \(allowed)\n")
        response.headers.append(("Allow", allowed.hasPrefix("POST") ? "GET, POST" : "GET"))
        return response
    }
}
