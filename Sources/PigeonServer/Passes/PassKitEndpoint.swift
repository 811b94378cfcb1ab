import Foundation
import PigeonCore
import PigeonCrypto
import PigeonHTTP
import PigeonStore

/// Apple's PassKit web service (CONTRACT §7) under `passWebServicePath` on the public listener:
/// Wallet registers and unregisters passes, asks which of its passes changed, downloads them
/// and posts its logs. Every path part, header and body is a phone's: shapes are checked before
/// anything is looked up, bodies are capped before they are read, calls are limited per client
/// address, and a wrong or missing `ApplePass` token changes nothing (401).
struct PassKitEndpoint: Sendable {
    /// The largest registration body (`{"pushToken": …}`).
    static let maximumRegistrationBytes = 4 * 1024
    /// The largest `/v1/log` body, how many of its messages are logged, and how long each may be.
    /// Wallet's log calls carry no credential (Apple's protocol), so nothing of them is stored:
    /// they go to the gateway's log, bounded, under a per-address and a global budget.
    static let maximumLogBytes = 4 * 1024
    static let maximumLogMessages = 10
    static let maximumLogMessageLength = 256
    /// `/v1/log` calls per client address, and from all addresses together, per minute.
    static let logCallsPerAddressPerMinute = 10
    static let logCallsPerMinute = 120

    /// The configured path (`/passkit`): the pass's `webServiceURL` ends with it.
    let prefix: String
    let store: PassStore
    let limits: PassStore.RegistrationLimits
    let addressLimit: AddressRateLimit
    /// `/v1/log` calls per address, and from every address together (one shared key).
    let logAddressLimit = AddressRateLimit(perMinute: PassKitEndpoint.logCallsPerAddressPerMinute)
    let logGlobalLimit = AddressRateLimit(perMinute: PassKitEndpoint.logCallsPerMinute)
    let metrics: MetricsRegistry
    let logger: Logger

    /// Whether `path` is this service's.
    func serves(_ path: String) -> Bool {
        path.hasPrefix(prefix + "/")
    }

    /// How much body a request may send, from its head.
    func maximumBody(_ head: HTTPRequestHead) -> Int {
        guard head.method == "POST" else { return 0 }
        return head.path == prefix + "/v1/log" ? Self.maximumLogBytes : Self.maximumRegistrationBytes
    }

    /// The route template (for metrics) and the answer.
    func handle(_ request: HTTPRequest) async -> (String, HTTPResponse) {
        let parts = request.path.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let route = Self.route(parts)
        if let retryAfter = addressLimit.take(request.peer) {
            var response = HTTPResponse.text(429, "too many requests from this address\n")
            response.headers.append(("Retry-After", String(retryAfter)))
            return (route, response)
        }
        do {
            switch (request.method, parts.count, parts.first, parts.count > 1 ? parts[1] : nil, parts.count > 3 ? parts[3] : nil) {
            case ("POST", 6, "v1", "devices", "registrations"):
                return (route, try await register(device: parts[2], pass: try identity(parts[4], parts[5]), request))
            case ("DELETE", 6, "v1", "devices", "registrations"):
                return (route, try await unregister(device: parts[2], pass: try identity(parts[4], parts[5]), request))
            case ("GET", 5, "v1", "devices", "registrations"):
                return (route, try await serials(device: parts[2], passType: parts[4], request))
            case ("GET", 4, "v1", "passes", _):
                return (route, try await pass(try identity(parts[2], parts[3]), request))
            case ("POST", 2, "v1", "log", nil):
                return (route, try await log(request))
            case (_, 6, "v1", "devices", "registrations"):
                return (route, Self.methodNotAllowed("POST, DELETE"))
            case (_, 5, "v1", "devices", "registrations"), (_, 4, "v1", "passes", _):
                return (route, Self.methodNotAllowed("GET"))
            case (_, 2, "v1", "log", nil):
                return (route, Self.methodNotAllowed("POST"))
            default:
                return (route, .text(404, "no such resource\n"))
            }
        } catch let refusal as Refusal {
            return (route, refusal.response)
        } catch {
            logger.error("PassKit web service call failed", metadata: ["route": route, "error": "\(error)"])
            return (route, .text(503, "the service cannot answer right now; try again\n"))
        }
    }

    // MARK: Calls

    private func register(device: String, pass: PassIdentity, _ request: HTTPRequest) async throws -> HTTPResponse {
        if request.bodyTooLarge { throw Refusal(413, "a registration's body is at most \(Self.maximumRegistrationBytes) bytes") }
        try Self.checkIdentifier(device, "deviceLibraryIdentifier")
        let digest = try authentication(request)
        guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any],
              let pushToken = object["pushToken"] as? String else {
            throw Refusal(400, "the body must be a JSON object with pushToken")
        }
        guard PassFields.isPushToken(pushToken) else { throw Refusal(400, "pushToken must be an APNs device token (hexadecimal)") }
        let result = try await store.register(device: device, pushToken: pushToken, for: pass, authenticationDigest: digest, limits: limits)
        metrics.increment("pigeon_pass_registrations_total", labels: ["result": Self.label(result)])
        switch result {
        case .created:
            logger.info("Wallet registered a pass", metadata: ["pass": pass.description, "device": Redaction.token(device),
                                                                "pushToken": Redaction.token(pushToken)])
            return HTTPResponse(status: 201)
        case .alreadyRegistered:
            return HTTPResponse(status: 200)
        case .unauthorized:
            throw Refusal.unauthorized
        case .limitReached(let message):
            logger.notice("Wallet registration refused: limit reached", metadata: ["pass": pass.description, "reason": message])
            throw Refusal(403, message)
        }
    }

    private func unregister(device: String, pass: PassIdentity, _ request: HTTPRequest) async throws -> HTTPResponse {
        try Self.checkIdentifier(device, "deviceLibraryIdentifier")
        let digest = try authentication(request)
        guard try await store.unregister(device: device, from: pass, authenticationDigest: digest) else { throw Refusal.unauthorized }
        logger.info("Wallet unregistered a pass", metadata: ["pass": pass.description, "device": Redaction.token(device)])
        return HTTPResponse(status: 200)
    }

    private func serials(device: String, passType: String, _ request: HTTPRequest) async throws -> HTTPResponse {
        try Self.checkIdentifier(device, "deviceLibraryIdentifier")
        try Self.checkIdentifier(passType, "passTypeIdentifier")
        // The tag is opaque to the device; one Pigeon did not hand out means "everything".
        let since = request.query.first { $0.name == "passesUpdatedSince" }?.value.flatMap { $0.utf8.count <= 20 ? Int64($0) : nil }
        guard let changed = try await store.serialsUpdated(device: device, passType: passType, since: since),
              !changed.serials.isEmpty else {
            return HTTPResponse(status: 204)
        }
        return JSONResponse.make(200, ["serialNumbers": changed.serials, "lastUpdated": String(changed.lastUpdated)])
    }

    private func pass(_ pass: PassIdentity, _ request: HTTPRequest) async throws -> HTTPResponse {
        let digest = try authentication(request)
        let since = request.header("if-modified-since").flatMap(HTTPDate.parse)
        switch try await store.fetch(pass, authenticationDigest: digest, ifModifiedSince: since) {
        case .unauthorized:
            throw Refusal.unauthorized
        case .notModified(let modifiedAt):
            metrics.increment("pigeon_pass_fetches_total", labels: ["result": "not_modified"])
            return HTTPResponse(status: 304, headers: [("Last-Modified", HTTPDate.format(modifiedAt))])
        case .pass(let content, let modifiedAt, let version):
            metrics.increment("pigeon_pass_fetches_total", labels: ["result": "pass"])
            logger.debug("pass downloaded", metadata: ["pass": pass.description, "version": String(version)])
            return HTTPResponse(status: 200, headers: [
                ("Content-Type", "application/vnd.apple.pkpass"), ("Last-Modified", HTTPDate.format(modifiedAt)),
                ("Cache-Control", "no-store"),
            ], body: content)
        }
    }

    /// `POST /v1/log`: what a Wallet reports about our web service, written to the gateway's log
    /// (escaped, at most ``maximumLogMessages`` of ``maximumLogMessageLength`` characters) and
    /// not stored: anyone can call it, so it must not become free storage.
    private func log(_ request: HTTPRequest) async throws -> HTTPResponse {
        if request.bodyTooLarge { throw Refusal(413, "a log's body is at most \(Self.maximumLogBytes) bytes") }
        if let retry = logAddressLimit.take(request.peer) ?? logGlobalLimit.take("all") {
            throw Refusal(429, "too many log calls; try again in \(retry) s")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any],
              let logs = object["logs"] as? [Any] else {
            throw Refusal(400, "the body must be a JSON object with logs, a list of strings")
        }
        let messages = logs.prefix(Self.maximumLogMessages).compactMap { $0 as? String }.map {
            LogText.escaped(String($0.prefix(Self.maximumLogMessageLength)), limit: Self.maximumLogMessageLength)
        }
        for message in messages {
            logger.info("Wallet log", metadata: ["peer": request.peer, "message": message])
        }
        return HTTPResponse(status: 200)
    }

    // MARK: Checks

    /// The SHA-256 digest of the `ApplePass` token, or 401.
    private func authentication(_ request: HTTPRequest) throws(Refusal) -> Data {
        guard let header = request.header("authorization"), header.hasPrefix("ApplePass ") else { throw .unauthorized }
        let token = String(header.dropFirst("ApplePass ".count))
        guard PassFields.authenticationTokenProblem(token) == nil else { throw .unauthorized }
        return SecretToken.digest(token)
    }

    private func identity(_ passType: String, _ serial: String) throws(Refusal) -> PassIdentity {
        try Self.checkIdentifier(passType, "passTypeIdentifier")
        try Self.checkIdentifier(serial, "serialNumber")
        return PassIdentity(passTypeIdentifier: passType, serialNumber: serial)
    }

    private static func checkIdentifier(_ value: String, _ name: String) throws(Refusal) {
        if let problem = PassFields.identifierProblem(value, name: name) { throw Refusal(400, problem) }
    }

    /// A bounded route label for metrics.
    private static func route(_ parts: [String]) -> String {
        switch (parts.count, parts.first, parts.count > 1 ? parts[1] : nil) {
        case (6, "v1", "devices"): "passkit_registration"
        case (5, "v1", "devices"): "passkit_serials"
        case (4, "v1", "passes"): "passkit_pass"
        case (2, "v1", "log"): "passkit_log"
        default: "passkit"
        }
    }

    private static func label(_ result: PassStore.RegistrationResult) -> String {
        switch result {
        case .created: "created"
        case .alreadyRegistered: "known"
        case .unauthorized: "unauthorized"
        case .limitReached: "limit"
        }
    }

    private static func methodNotAllowed(_ allowed: String) -> HTTPResponse {
        var response = HTTPResponse.text(405, "method not allowed; use \(allowed)\n")
        response.headers.append(("Allow", allowed))
        return response
    }

    /// A request refused with a status and a one-line reason.
    struct Refusal: Error {
        var status: Int
        var message: String

        init(_ status: Int, _ message: String) {
            self.status = status
            self.message = message
        }

        static let unauthorized = Refusal(401, "missing or wrong ApplePass authentication token")

        var response: HTTPResponse { .text(status, message + "\n") }
    }
}
