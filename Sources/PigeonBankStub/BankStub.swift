import BankContract
import Foundation
import PigeonCore
import PigeonHTTP
import SOAPCodec
import Synchronization

/// `pigeon bank-stub`: a reference bank proxy implementing the `SBIOutbound` service (CONTRACT
/// §3) from the same description the gateway's client and WSDL use. It knows a set of bank
/// clients, authorizes subscriptions by an SMS code it writes to its log instead of sending,
/// and records every report. For tests and integrators it answers admin calls on the same port:
/// `GET /stub/reports`, `GET /stub/codes`, `PUT /stub/mode`, `GET /stub/health`.
package final class BankStub: Sendable {
    /// What the stub accepts.
    package struct Configuration: Sendable {
        /// Known bank client ids; empty accepts every id.
        package var bankClients: Set<String> = []
        /// Users whose subscriptions are authorized from the start (no SMS needed); `*`
        /// authorizes everyone.
        package var authorizedUsers: Set<String> = []
        /// The SMS code to issue; random six digits when nil.
        package var fixedCode: String?
        /// HTTP Basic credentials SOAP callers must present (401 otherwise); nil for none.
        package var requiredCredentials: (username: String, password: String)?
        /// HTTPS (and, with a client CA, mutual TLS) instead of plain HTTP.
        package var tls: HTTPServer.TLS?
        /// Answer one-field results directly in `return` (`<return>true</return>`), as proxies
        /// generated from other WSDLs do, instead of in its named child.
        package var bareReturn = false

        package init(bankClients: Set<String> = [], authorizedUsers: Set<String> = [], fixedCode: String? = nil,
                    requiredCredentials: (username: String, password: String)? = nil, tls: HTTPServer.TLS? = nil, bareReturn: Bool = false) {
            self.bankClients = bankClients
            self.authorizedUsers = authorizedUsers
            self.fixedCode = fixedCode
            self.requiredCredentials = requiredCredentials
            self.tls = tls
            self.bareReturn = bareReturn
        }
    }

    /// How the stub answers SOAP calls, to rehearse a bank that misbehaves.
    package enum Mode: Sendable, Equatable {
        case normal
        /// 503 with an HTML error page, as a proxy in front of a dead service answers.
        case down
        /// Answers correctly after this many milliseconds.
        case slow(milliseconds: Int)
        /// 200 with a body that is not SOAP.
        case garbage
        /// Acts on `authorizeSubscription` (an SMS is sent), then closes the connection without
        /// answering; other calls are answered normally.
        case dropAfterAction
    }

    /// A report the stub received.
    package struct Report: Sendable, Equatable {
        /// `reportNotificationExpired`, `pushIsOpened` or `reportPassUpdateNotFetched`.
        package var operation: String
        /// The notification id, or the pass as `passTypeIdentifier/serialNumber`.
        package var notificationId: String
        package var users: [String]
        /// Devices that did not fetch a pass's update (`reportPassUpdateNotFetched`).
        package var deviceCount: Int? = nil
    }

    private struct State {
        var mode = Mode.normal
        var codes: [String: String] = [:]
        var reports: [Report] = []
        /// When each report arrived (seconds since 1970), in the order of ``reports``.
        var received: [Double] = []
        var calls = 0
        var smsSent = 0
    }

    package let port: UInt16
    private let configuration: Configuration
    private let state: Mutex<State>
    private let codec = SOAPCodec(service: OutboundService.description)
    private let logger: Logger
    private let server: Mutex<HTTPServer?>
    private let box: HandlerBox

    /// Starts listening on `host:port` (0 picks a free port).
    package init(configuration: Configuration, host: String = "127.0.0.1", port: UInt16, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        state = Mutex(State())
        server = Mutex(nil)
        let box = HandlerBox()
        self.box = box
        let http = try HTTPServer(
            configuration: .init(host: host, port: port, connectionLimit: 256, idleTimeoutSeconds: 30, handlerThreads: 2, tls: configuration.tls),
            logger: logger, admit: { _ in .accept(maxBytes: 4 << 20) },
            handler: { request in await box.stub.withLock { $0 }?.handle(request) ?? .text(503, "stopped") })
        self.port = http.port
        server.withLock { $0 = http }
        box.stub.withLock { $0 = self }
    }

    /// The address to put in the gateway's `sbiOutboundWebServiceURL`.
    package var serviceURL: String { "\(configuration.tls == nil ? "http" : "https")://127.0.0.1:\(port)\(Self.servicePath)" }
    package static let servicePath = "/sbi-outbound/services/SBIOutbound"

    /// Stops listening. Call once.
    package func stop() {
        server.withLock { $0?.stop(); $0 = nil }
        box.stub.withLock { $0 = nil }
    }

    package func setMode(_ mode: Mode) {
        state.withLock { $0.mode = mode }
        logger.notice("mode changed", metadata: ["mode": "\(mode)"])
    }

    /// Reports received so far, oldest first.
    package var reports: [Report] { state.withLock { $0.reports } }

    /// SOAP calls answered so far (any operation, any mode).
    package var calls: Int { state.withLock { $0.calls } }

    /// SMS codes sent so far (`authorizeSubscription` calls acted on).
    package var smsSent: Int { state.withLock { $0.smsSent } }

    /// The SMS code last issued for a device, as the stub's log shows it.
    package func code(bankClientId: String, userId: String, deviceId: String) -> String? {
        state.withLock { $0.codes[Self.deviceKey(bankClientId, userId, deviceId)] }
    }

    // MARK: Handling

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        switch (request.method, request.path) {
        case ("GET", "/stub/health"):
            return .text(200, #"{"status":"UP"}"#, contentType: "application/json")
        case ("GET", "/stub/reports"):
            return .text(200, reportsJSON(), contentType: "application/x-ndjson")
        case ("GET", "/stub/codes"):
            let codes = state.withLock { $0.codes }.sorted { $0.key < $1.key }
            return .text(200, Self.jsonLines(codes.map { ["device": $0.key, "code": $0.value] }), contentType: "application/x-ndjson")
        case ("PUT", "/stub/mode"):
            guard let mode = Self.mode(from: request.body) else {
                return .text(400, #"{"error":"expected {\"mode\": \"normal|down|garbage|slow\", \"milliseconds\": N}"}"#, contentType: "application/json")
            }
            setMode(mode)
            return .text(200, #"{"mode":"ok"}"#, contentType: "application/json")
        case ("GET", Self.servicePath) where request.hasQueryArgument("wsdl"):
            let host = request.header("host") ?? "127.0.0.1:\(port)"
            return .text(200, WSDLGenerator(service: OutboundService.description).wsdl(address: "http://\(host)\(Self.servicePath)"), contentType: "text/xml; charset=utf-8")
        case ("POST", Self.servicePath):
            return await soap(request)
        default:
            return .text(404, "not found")
        }
    }

    private func soap(_ request: HTTPRequest) async -> HTTPResponse {
        if let credentials = configuration.requiredCredentials {
            let expected = "Basic " + Data("\(credentials.username):\(credentials.password)".utf8).base64EncodedString()
            guard request.header("authorization") == expected else {
                logger.warning("SOAP call without the expected credentials refused")
                return .text(401, "authentication required")
            }
        }
        let mode = state.withLock { state -> Mode in
            state.calls += 1
            return state.mode
        }
        switch mode {
        case .down:
            return .text(503, "<html><body><h1>503 Service Unavailable</h1></body></html>", contentType: "text/html")
        case .garbage:
            return .text(200, "this is not SOAP", contentType: "text/plain")
        case .slow(let milliseconds):
            try? await Task.sleep(for: .milliseconds(milliseconds))
        case .normal, .dropAfterAction:
            break
        }
        let decoded: SOAPRequest
        do {
            decoded = try codec.decodeRequest(request.body, contentType: request.header("content-type"))
        } catch {
            return fault(error.fault, version: error.version)
        }
        let parameters = decoded.parameters
        let bankClientId = parameters.string("bankClientId") ?? ""
        let userId = parameters.string("userId") ?? ""
        let deviceId = parameters.string("deviceId") ?? ""
        let operation = decoded.operation
        if ["checkSubscriptionAuthorized", "authorizeSubscription", "verifySubscriptionAuthorization"].contains(operation.name),
           !configuration.bankClients.isEmpty, !configuration.bankClients.contains(bankClientId) {
            logger.info("unknown bank client", metadata: ["operation": operation.name, "bankClientId": bankClientId])
            return fault(SOAPFault(.server, "bank client '\(bankClientId)' does not exist", detail: OutboundService.bankClientNotExists.name), version: decoded.version)
        }
        let result: SOAPRecord
        switch operation.name {
        case "checkSubscriptionAuthorized":
            // Only users the bank authorized beforehand: a device id is no secret, so a bank that
            // authorized a device again because it once entered a code would let anyone who knows
            // the id take it over.
            let authorized = configuration.authorizedUsers.contains("*") || configuration.authorizedUsers.contains(userId)
            logger.info("checkSubscriptionAuthorized", metadata: ["user": userId, "device": deviceId, "authorized": String(authorized)])
            result = SOAPRecord(["authorized": [.boolean(authorized)]])
        case "authorizeSubscription":
            let code = configuration.fixedCode ?? String(format: "%06d", Int.random(in: 0..<1_000_000))
            state.withLock {
                $0.codes[Self.deviceKey(bankClientId, userId, deviceId)] = code
                $0.smsSent += 1
            }
            logger.notice("SMS to the bank client", metadata: ["bankClientId": bankClientId, "user": userId, "device": deviceId, "code": code])
            result = SOAPRecord(["result": [.string("OK")]])
        case "verifySubscriptionAuthorization":
            let key = Self.deviceKey(bankClientId, userId, deviceId)
            let entered = parameters.string("verificationCode") ?? ""
            let verified = state.withLock { state -> Bool in
                guard let code = state.codes[key], code == entered else { return false }
                state.codes[key] = nil
                return true
            }
            logger.info("verifySubscriptionAuthorization", metadata: ["user": userId, "device": deviceId, "verified": String(verified)])
            result = SOAPRecord(["result": [.string(verified ? "OK" : "VERIFICATION_FAILED")]])
        case "reportNotificationExpired", "pushIsOpened":
            let report = Report(operation: operation.name, notificationId: parameters.string("notificationId") ?? "", users: parameters.strings("userId"))
            state.withLock {
                $0.reports.append(report)
                $0.received.append(Date().timeIntervalSince1970)
            }
            logger.notice("report received", metadata: ["operation": report.operation, "notification": report.notificationId, "users": report.users.prefix(20).joined(separator: ","), "count": String(report.users.count)])
            result = SOAPRecord()
        case "reportPassUpdateNotFetched":
            let pass = "\(parameters.string("passTypeIdentifier") ?? "")/\(parameters.string("serialNumber") ?? "")"
            let report = Report(operation: operation.name, notificationId: pass, users: [], deviceCount: parameters.int("deviceCount").map(Int.init))
            state.withLock {
                $0.reports.append(report)
                $0.received.append(Date().timeIntervalSince1970)
            }
            logger.notice("report received", metadata: ["operation": report.operation, "pass": pass, "devices": String(report.deviceCount ?? 0)])
            result = SOAPRecord()
        default:
            return fault(.client("unknown operation '\(operation.name)'"), version: decoded.version)
        }
        if mode == .dropAfterAction && operation.name == "authorizeSubscription" { return .dropped }
        var body = codec.encodeResponse(operation, result: result, version: decoded.version)
        if configuration.bareReturn, result.fields.count == 1, let field = result.fields.keys.first {
            // <return><authorized>true</authorized></return> → <return>true</return>
            let text = String(decoding: body, as: UTF8.self)
                .replacingOccurrences(of: "<return><\(field)>", with: "<return>")
                .replacingOccurrences(of: "</\(field)></return>", with: "</return>")
            body = Data(text.utf8)
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", decoded.version.contentType)], body: body)
    }

    private func fault(_ fault: SOAPFault, version: SOAPVersion) -> HTTPResponse {
        HTTPResponse(status: 500, headers: [("Content-Type", version.contentType)], body: codec.encodeFault(fault, version: version))
    }

    private func reportsJSON() -> String {
        let (reports, received) = state.withLock { ($0.reports, $0.received) }
        return Self.jsonLines(zip(reports, received).map { report, at in
            var object: [String: Any] = ["operation": report.operation, "notificationId": report.notificationId, "users": report.users,
                                         "receivedAt": at]
            if let count = report.deviceCount { object["deviceCount"] = count }
            return object
        })
    }

    /// One JSON object per line.
    private static func jsonLines(_ objects: [[String: Any]]) -> String {
        objects.compactMap { object in
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])).map { String(decoding: $0, as: UTF8.self) + "\n" }
        }.joined()
    }

    private static func deviceKey(_ bankClientId: String, _ userId: String, _ deviceId: String) -> String {
        "\(bankClientId)/\(userId)/\(deviceId)"
    }

    static func mode(from body: Data) -> Mode? {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any], let name = object["mode"] as? String else { return nil }
        switch name {
        case "normal": return .normal
        case "down": return .down
        case "garbage": return .garbage
        case "dropAfterAction": return .dropAfterAction
        case "slow":
            guard let milliseconds = (object["milliseconds"] as? NSNumber)?.intValue, (0...600_000).contains(milliseconds) else { return nil }
            return .slow(milliseconds: milliseconds)
        default: return nil
        }
    }
}

/// Lets the server's handler reach the stub, which exists only after the server started; stop()
/// empties it, ending the reference cycle stub → server → handler → box → stub.
private final class HandlerBox: Sendable {
    let stub = Mutex<BankStub?>(nil)
}
