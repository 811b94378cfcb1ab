import Foundation
import PigeonCore
import PigeonDomain
import PigeonCrypto
import PigeonHTTP

/// Apple's PassKit web service (CONTRACT §7) under `passWebServicePath` on the public listener:
/// Wallet registers and unregisters passes, asks which of its passes changed, downloads them
/// and posts its logs. Every path part, header and body is a phone's: ``PassKitCall`` checks their
/// shapes before anything is looked up, bodies are capped before they are read, calls are limited
/// per client address, and a wrong or missing `ApplePass` token changes nothing (401).
package struct PassKitEndpoint: Sendable {
    /// Wallet's log calls carry no credential (Apple's protocol), so nothing of them is stored:
    /// they go to the gateway's log, bounded (``PassKitCall``), under a per-address and a global
    /// budget: `/v1/log` calls per client address, and from all addresses together, per minute.
    package static let logCallsPerAddressPerMinute = 10
    package static let logCallsPerMinute = 120
    /// Lines those calls write to the gateway's log a minute, at most (about 10 MB a day); the
    /// rest are counted in the next line. At the call budget alone (120 calls of 10 messages a
    /// minute) the log grew by 0.65 GB a day.
    package static let logLinesPerMinute = 20
    /// The request headers Wallet's calls are read by: the pass's `ApplePass` token and
    /// `If-Modified-Since` of a download.
    package static let requestHeaders: Set<String> = ["authorization", "if-modified-since"]

    /// The configured path (`/passkit`): the pass's `webServiceURL` ends with it.
    package let prefix: String
    package let store: any WalletRegistering
    package let limits: PassRegistrationLimits
    package let addressLimit: AddressRateLimit
    /// `/v1/log` calls per address, and from every address together (one shared key).
    package let logAddressLimit = AddressRateLimit(perMinute: PassKitEndpoint.logCallsPerAddressPerMinute)
    package let logGlobalLimit = AddressRateLimit(perMinute: PassKitEndpoint.logCallsPerMinute)
    package let logLines = LogBudget(perMinute: PassKitEndpoint.logLinesPerMinute)
    package let metrics: MetricsRegistry
    package let logger: Logger

    package init(prefix: String, store: any WalletRegistering, limits: PassRegistrationLimits, addressLimit: AddressRateLimit, metrics: MetricsRegistry, logger: Logger) {
        self.prefix = prefix
        self.store = store
        self.limits = limits
        self.addressLimit = addressLimit
        self.metrics = metrics
        self.logger = logger
    }

    /// Whether `path` is this service's.
    package func serves(_ path: String) -> Bool {
        path.hasPrefix(prefix + "/")
    }

    /// How much body a request may send, from its head.
    package func maximumBody(_ head: HTTPRequestHead) -> Int {
        guard head.method == "POST" else { return 0 }
        return head.path == prefix + "/v1/log" ? PassKitCall.maximumLogBytes : PassKitCall.maximumRegistrationBytes
    }

    /// The route template (for metrics) and the answer.
    package func handle(_ request: HTTPRequest) async -> (String, HTTPResponse) {
        let parts = PassKitCall.parts(of: request.path, prefix: prefix)
        let route = PassKitCall.route(parts)
        if let retryAfter = addressLimit.take(request.peer) {
            var response = HTTPResponse.text(429, "too many requests from this address\n")
            response.headers.append(("Retry-After", String(retryAfter)))
            return (route, response)
        }
        // A log body refused for its size (413, never read) does not spend the budget.
        if request.method == "POST", parts == ["v1", "log"], !request.bodyTooLarge,
           let retry = logAddressLimit.take(request.peer) ?? logGlobalLimit.take("all") {
            return (route, PassKitRefusal(429, "too many log calls; try again in \(retry) s").response)
        }
        do {
            return (route, try await answer(try PassKitCall.parse(request, parts: parts), peer: request.peer))
        } catch let refusal as PassKitRefusal {
            return (route, refusal.response)
        } catch {
            logger.error("PassKit web service call failed", metadata: ["route": route, "error": "\(error)"])
            return (route, .text(503, "the service cannot answer right now; try again\n"))
        }
    }

    // MARK: Calls

    private func answer(_ call: PassKitCall, peer: String) async throws -> HTTPResponse {
        switch call {
        case .register(let device, let pass, let pushToken, let digest):
            return try await register(device: device, pass: pass, pushToken: pushToken, digest: digest)
        case .unregister(let device, let pass, let digest):
            guard try await store.unregister(device: device, from: pass, authenticationDigest: digest) else { throw PassKitRefusal.unauthorized }
            logger.info("Wallet unregistered a pass", metadata: ["pass": pass.description, "device": Redaction.token(device)])
            return HTTPResponse(status: 200)
        case .serials(let device, let passType, let since):
            guard let changed = try await store.serialsUpdated(device: device, passType: passType, since: since),
                  !changed.serials.isEmpty else {
                return HTTPResponse(status: 204)
            }
            return JSONResponse.make(200, ["serialNumbers": changed.serials, "lastUpdated": String(changed.lastUpdated)])
        case .pass(let pass, let digest, let since):
            return try await fetch(pass, digest: digest, ifModifiedSince: since)
        case .log(let messages):
            // Logged, not stored: anyone can call it, so it must not become free storage.
            for message in messages {
                guard let suppressed = logLines.admit() else { continue }
                var metadata = ["peer": peer, "message": message]
                if suppressed > 0 { metadata["suppressedSinceLast"] = String(suppressed) }
                logger.info("Wallet log", metadata: metadata)
            }
            return HTTPResponse(status: 200)
        }
    }

    private func register(device: String, pass: PassIdentity, pushToken: String, digest: Data) async throws -> HTTPResponse {
        let result = try await store.register(device: device, pushToken: pushToken, for: pass, authenticationDigest: digest, limits: limits)
        metrics.increment(Metric.passRegistrationsTotal, labels: ["result": Self.label(result)])
        switch result {
        case .created:
            logger.info("Wallet registered a pass", metadata: ["pass": pass.description, "device": Redaction.token(device),
                                                                "pushToken": Redaction.token(pushToken)])
            return HTTPResponse(status: 201)
        case .alreadyRegistered:
            return HTTPResponse(status: 200)
        case .unauthorized:
            throw PassKitRefusal.unauthorized
        case .limitReached(let message):
            logger.notice("Wallet registration refused: limit reached", metadata: ["pass": pass.description, "reason": message])
            throw PassKitRefusal(403, message)
        }
    }

    private func fetch(_ pass: PassIdentity, digest: Data, ifModifiedSince since: Date?) async throws -> HTTPResponse {
        switch try await store.fetch(pass, authenticationDigest: digest, ifModifiedSince: since) {
        case .unauthorized:
            throw PassKitRefusal.unauthorized
        case .notModified(let modifiedAt):
            metrics.increment(Metric.passFetchesTotal, labels: ["result": "not_modified"])
            return HTTPResponse(status: 304, headers: [("Last-Modified", HTTPDate.format(modifiedAt))])
        case .pass(let content, let modifiedAt, let version):
            metrics.increment(Metric.passFetchesTotal, labels: ["result": "pass"])
            logger.debug("pass downloaded", metadata: ["pass": pass.description, "version": String(version)])
            return HTTPResponse(status: 200, headers: [
                ("Content-Type", "application/vnd.apple.pkpass"), ("Last-Modified", HTTPDate.format(modifiedAt)),
                ("Cache-Control", "no-store"),
            ], body: content)
        }
    }

    private static func label(_ result: PassRegistrationResult) -> String {
        switch result {
        case .created: "created"
        case .alreadyRegistered: "known"
        case .unauthorized: "unauthorized"
        case .limitReached: "limit"
        }
    }
}
