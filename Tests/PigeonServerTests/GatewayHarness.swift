import Foundation
@testable import PigeonConfiguration
import PigeonCore
import PigeonServer
import PigeonTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A gateway started in-process on a free port against the test database.
final class GatewayHarness: Sendable {
    let gateway: Gateway
    /// `listen` (the device API; SOAP too unless `bankListen` is set).
    let baseURL: String
    /// Where the SOAP service is: `bankListen` when set, else `listen`.
    let bankBaseURL: String
    let logs = InMemoryLogHandler()

    convenience init(_ adjust: (inout GatewayConfiguration) -> Void = { _ in }) async throws {
        try await self.init(clock: nil, adjust)
    }

    /// A gateway whose console sessions and sign-in limits read `clock` (nil: the system's time).
    init(clock: (@Sendable () -> Date)?, _ adjust: (inout GatewayConfiguration) -> Void) async throws {
        var configuration = GatewayConfiguration()
        configuration.http.port = 0
        configuration.database.url = TestDatabase.url
        configuration.database.poolSize = 2
        configuration.database.migrationsPath = TestDatabase.migrationsDirectory.path
        adjust(&configuration)
        gateway = try await Gateway.start(configuration: configuration, logger: Logger(label: "test", level: .debug, handler: logs), clock: clock)
        let scheme = configuration.http.tlsCertificatePath == nil ? "http" : "https"
        baseURL = "\(scheme)://127.0.0.1:\(gateway.port)"
        if let bank = configuration.http.bank {
            bankBaseURL = "\(bank.tlsCertificatePath == nil ? "http" : "https")://127.0.0.1:\(gateway.bankPort)"
        } else {
            bankBaseURL = baseURL
        }
    }

    /// Runs `body` with a gateway started as ``init(_:)`` does, and stops it before returning,
    /// whether `body` returned or threw: the next test never shares the machine with it.
    static func with<T>(_ adjust: (inout GatewayConfiguration) -> Void = { _ in },
                        _ body: (GatewayHarness) async throws -> T) async throws -> T {
        let harness = try await GatewayHarness(adjust)
        do {
            let result = try await body(harness)
            await harness.gateway.shutdown()
            return result
        } catch {
            await harness.gateway.shutdown()
            throw error
        }
    }

    /// The gateway's log records at `level` and above, a line each: what a failed expectation
    /// about pushes or states prints, so CI's log says what the gateway saw ("push failed" and
    /// its reason is at info).
    func logLines(atLeast level: Logger.Level = .info) -> [String] {
        logs.records.filter { $0.level >= level }.map { "\($0.level) \($0.message) \($0.metadata)" }
    }

    deinit {
        // A harness dropped without its scope's stop: the gateway stops in the background.
        let gateway = self.gateway
        Task { await gateway.shutdown() }
    }

    static let soapPath = "/pigeon/services/SBIInboundWebService"

    /// One HTTP exchange.
    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    func request(_ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:], timeout: TimeInterval = 60) async throws -> Reply {
        try await request(method, path, on: path == Self.soapPath || path == "/metrics" || path == "/ready" ? bankBaseURL : baseURL, body: body, headers: headers, timeout: timeout)
    }

    func request(_ method: String, _ path: String, on base: String, body: Data? = nil, headers: [String: String] = [:], timeout: TimeInterval = 60) async throws -> Reply {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = timeout
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        let http = response as! HTTPURLResponse
        var replyHeaders: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            replyHeaders[String(describing: key).lowercased()] = String(describing: value)
        }
        return Reply(status: http.statusCode, headers: replyHeaders, body: data)
    }

    /// POSTs a SOAP 1.1 envelope around `body`.
    func soap(_ body: String, headers: [String: String] = [:]) async throws -> Reply {
        try await soapRaw(Data(Self.envelope(body).utf8), headers: headers)
    }

    func soapRaw(_ data: Data, contentType: String = "text/xml; charset=utf-8", headers: [String: String] = [:], timeout: TimeInterval = 60) async throws -> Reply {
        try await request("POST", Self.soapPath, body: data, headers: headers.merging(["Content-Type": contentType, "SOAPAction": "\"\""]) { a, _ in a }, timeout: timeout)
    }

    static func envelope(_ body: String) -> String {
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:inb=\"http://inbound.sbi.pigeon.idamobile.com/\"><soapenv:Body>\(body)</soapenv:Body></soapenv:Envelope>"
    }

    static func sendNotification(id: String, recipients: [String], timeout: String = "60", extra: String = "") -> String {
        "<inb:sendNotification><notification><id>\(id)</id><pushContent><badge>1</badge><text>Hello</text><type>UNIVERSAL</type></pushContent>"
            + recipients.map { "<recipients>\($0)</recipients>" }.joined() + "<timeout>\(timeout)</timeout>\(extra)</notification></inb:sendNotification>"
    }
}
