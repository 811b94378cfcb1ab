import BankProxy
import Foundation
@testable import PigeonBankService
@testable import PigeonConfiguration
@testable import PigeonConsole
import PigeonCore
import PigeonDomain
@testable import PigeonDeviceAPI
import PigeonHTTP
@testable import PigeonServer
import PigeonStore
import PigeonTestSupport
@testable import PigeonWallet
import Synchronization

/// The gateway's request side without sockets or PostgreSQL: one ``Router`` composed as
/// `Gateway` composes it, on ``InMemoryStores``, ``InMemoryWallet`` and a ``FakeBank``.
/// A request goes in, a response comes out, in microseconds.
struct RouterHarness {
    /// The stores' time (token expiry, rate-limit windows); tests move it forward.
    let clock = TestClock()
    let stores: InMemoryStores
    let activities: InMemoryActivities
    /// Live Activity broadcast channels (wired with ``activities``).
    let channels = InMemoryBroadcastChannels()
    /// How many times the activity engine was woken.
    var activityWakes: Int { events.activityWakes }
    let wallet = InMemoryWallet()
    let bank: FakeBank
    let metrics = MetricsRegistry()
    /// Set as the gateway's stop sets it: `/ready` then answers 503.
    let stopping = GracefulStop()
    let router: Router
    /// The console's source when the harness serves the console (`console: true`).
    let console: InMemoryConsole?
    /// What the endpoints logged.
    let log: InMemoryLogHandler
    /// The console's audit trail and sessions.
    let audit: InMemoryAuditTrail
    let sessionStore: InMemoryConsoleSessionStore
    /// The ids of the notifications stored, in order (what wakes the engine).
    var stored: [String] { events.stored }
    /// What the requests told the background work.
    let events = RecordedRequestEvents()

    /// A clock that moves only when told to.
    final class TestClock: Sendable {
        private let time = Mutex(Date())
        var now: Date { time.withLock { $0 } }
        func advance(seconds: Double) { time.withLock { $0 += seconds } }
    }

    /// The request events, recorded.
    final class RecordedRequestEvents: RequestEvents {
        private struct Record {
            var stored: [String] = []
            var activityWakes = 0
            var reportWakes = 0
        }
        private let record = Mutex(Record())
        var stored: [String] { record.withLock { $0.stored } }
        var activityWakes: Int { record.withLock { $0.activityWakes } }
        var reportWakes: Int { record.withLock { $0.reportWakes } }

        func notificationStored(_ notification: PushNotification, expiresAt: Date) { record.withLock { $0.stored.append(notification.id) } }
        func activityQueued() { record.withLock { $0.activityWakes += 1 } }
        func reportsQueued() { record.withLock { $0.reportWakes += 1 } }
    }

    static let consoleUser = "operator"
    static let consolePassword = "console-password-2026"
    /// A users file with one operator of each role, each with the password `<role>-password-2026`
    /// (bcrypt at cost 5, quick to check).
    static let operatorsFile: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-operators-\(getpid()).txt").path
        let text = """
            # name:hash:role
            vera:$2b$05$cI/kD5ULD0e920EIT5BDyebKXuKNVD0ZvI.IlGiE2uPXlYZQQV8Zi:viewer
            sam:$2b$05$MPNsqnWsQpwyQIgMWMNhieZ7/Ac6UftF71B5YTN2T4YiSNgZ4qkfW:support
            ada:$2b$05$Dbighfmrx2QO3I4feU.38.dbYV3yOk9LfApIcU66RtqLq1/0EMhPG:admin

            """
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }()
    static let soapUser = "bank-user"
    static let soapPassword = "s3cret-bank-password"

    /// The request side as `Gateway` builds it (``RequestSide``), on in-memory stores:
    /// `adjust` changes the configuration it is built from (as `server.conf` would).
    init(surfaces: Router.Surfaces = [.devices, .bank], authorizedUsers: Set<String> = ["alice"], soapCredentials: Bool = false,
         bankConfigured: Bool = true, liveActivities: Bool = true, database: Database = .current, console serveConsole: Bool = false,
         adjust: (inout GatewayConfiguration) -> Void = { _ in }) throws {
        stores = InMemoryStores(clock: { [clock] in clock.now })
        activities = InMemoryActivities(devices: stores)
        var configuration = try GatewayConfiguration.parse(text: "", name: "server.conf")
        // Served over HTTPS on loopback, as the console needs; the files are never read here.
        configuration.http.host = "127.0.0.1"
        configuration.http.tlsCertificatePath = "/nonexistent/certificate.pem"
        configuration.http.tlsKeyPath = "/nonexistent/key.pem"
        configuration.bankProxyURL = bankConfigured ? "https://bank.example/sbi" : nil
        if soapCredentials {
            configuration.http.soapUsername = Self.soapUser
            configuration.http.soapPassword = Self.soapPassword
        }
        if serveConsole {
            configuration.console.usersFile = Self.operatorsFile
            configuration.console.username = Self.consoleUser
            configuration.console.password = Self.consolePassword
        }
        adjust(&configuration)
        let bank = FakeBank(authorizedUsers: authorizedUsers)
        self.bank = bank
        let log = InMemoryLogHandler()
        self.log = log
        let testClock = clock
        let console = serveConsole
            ? InMemoryConsole(stores: stores, settings: configuration.effectiveSettings(), clock: { [clock] in clock.now }) : nil
        self.console = console
        let audit = InMemoryAuditTrail(clock: { testClock.now })
        self.audit = audit
        let sessionStore = InMemoryConsoleSessionStore()
        self.sessionStore = sessionStore
        let requestSide = try RequestSide(
            configuration: configuration,
            stores: RequestStores(
                notifications: stores, subscriptions: stores, passes: wallet, activities: liveActivities ? activities : nil, channels: liveActivities ? channels : nil,
                registry: stores, acknowledgements: stores, rateLimits: stores, activityTokens: liveActivities ? activities : nil,
                bank: bankConfigured ? bank : nil, wallet: wallet,
                console: console.map { .init(sessions: sessionStore, audit: audit, data: $0) }),
            events: events,
            health: HealthEndpoint(pendingMigrations: database.pendingMigrations, stopping: stopping, logger: .silent),
            metrics: metrics, logger: Logger(label: "pigeon", level: .debug, handler: log), clock: { testClock.now })
        var router = requestSide.router(surfaces, tls: true)
        // A wrong guess past the limit is answered at once here (the gateway waits a second).
        router.soapFailureDelay = .zero
        self.router = router
    }

    /// What `/ready` finds in the database.
    enum Database: Sendable {
        case current
        case pending([Int])
        case unreachable

        struct Unreachable: Error {}

        var pendingMigrations: @Sendable () async throws -> [Int] {
            switch self {
            case .current: { [] }
            case .pending(let versions): { versions }
            case .unreachable: { throw Unreachable() }
            }
        }
    }

    /// An answer: status, headers, body as text and, for JSON bodies, its string members.
    struct Answer {
        var status: Int
        var headers: [(String, String)]
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: String] {
            guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else { return [:] }
            return object.compactMapValues { $0 as? String }
        }
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    /// One request through the router, with the body admission the listener would apply.
    func call(_ method: String, _ path: String, body: String? = nil, bytes raw: Data? = nil, headers: [String: String] = [:],
              bearer: String? = nil, peer: String = "192.0.2.10") async -> Answer {
        var headers = headers
        if let bearer { headers["authorization"] = "Bearer \(bearer)" }
        let split = path.split(separator: "?", maxSplits: 1)
        let query = split.count > 1 ? split[1].split(separator: "&").map { part -> (name: String, value: String?) in
            let pair = part.split(separator: "=", maxSplits: 1)
            return (String(pair[0]), pair.count > 1 ? String(pair[1]) : nil)
        } : []
        let bytes = raw ?? Data((body ?? "").utf8)
        let head = HTTPRequestHead(method: method, path: String(split[0]), authorization: headers["authorization"])
        let tooLarge: Bool
        switch router.admit(head) {
        case .refuse, .refuseWrongCredentials: tooLarge = true
        case .accept(let maxBytes), .acceptAuthenticated(let maxBytes): tooLarge = bytes.count > maxBytes
        }
        // The listener copies only the headers the router's endpoints read.
        let copied = headers.filter { router.requestHeaders.contains($0.key.lowercased()) }
        let request = HTTPRequest(method: method, path: String(split[0]), query: query, headers: copied,
                                  body: tooLarge ? Data() : bytes, bodyTooLarge: tooLarge, peer: peer)
        let response = await router.handle(request)
        return Answer(status: response.status, headers: response.headers, body: response.body)
    }

    /// A SOAP 1.1 call of the inbound service: `operation` is the body's inner XML.
    func soap(_ operation: String, credentials: (String, String)? = nil, peer: String = "192.0.2.10") async -> Answer {
        let envelope = """
            <soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/">\
            <soapenv:Body>\(operation)</soapenv:Body></soapenv:Envelope>
            """
        var headers = ["content-type": "text/xml; charset=utf-8"]
        if let (user, password) = credentials {
            headers["authorization"] = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        }
        return await call("POST", InboundEndpoint.path, body: envelope, headers: headers, peer: peer)
    }

    /// Raw bytes to the inbound service, as a SOAP client would post them.
    func soapRaw(_ body: Data, contentType: String = "text/xml; charset=utf-8") async -> Answer {
        await call("POST", InboundEndpoint.path, bytes: body, headers: ["content-type": contentType])
    }

    static func registration(user: String, device: String = "phone-1", platform: String = "IOS", token: String? = nil,
                             bank: String = "bank", extra: String = "") -> String {
        let pushToken = token ?? (platform == "IOS" ? String(repeating: "ab", count: 32) : "fcm-" + String(repeating: "x", count: 150))
        return #"{"bankClientId":"\#(bank)","userId":"\#(user)","deviceId":"\#(device)","platform":"\#(platform)","pushToken":"\#(pushToken)"\#(extra)}"#
    }

    static func verification(user: String, device: String = "phone-1", registrationId: String, code: String, bank: String = "bank") -> String {
        #"{"bankClientId":"\#(bank)","userId":"\#(user)","deviceId":"\#(device)","registrationId":"\#(registrationId)","verificationCode":"\#(code)"}"#
    }

    /// Registers an authorized user's device and returns its bearer token.
    func register(user: String = "alice", device: String = "phone-1", platform: String = "IOS") async throws -> String {
        let answer = await call("POST", "/api/v1/devices/register", body: Self.registration(user: user, device: device, platform: platform))
        guard answer.status == 200, let token = answer.json["authenticationToken"] else {
            throw HarnessError(description: "registration failed: \(answer.status) \(answer.text)")
        }
        return token
    }

    /// A sendNotification body (elements in the WSDL's order).
    static func send(id: String, to users: [String], text: String = "Your code is 4711", type: String = "PIN_CODE",
                     timeout: Int = 60, extra: String = "") -> String {
        "<inb:sendNotification><notification><id>\(id)</id><pushContent><text>\(text)</text><type>\(type)</type></pushContent>"
            + users.map { "<recipients>\($0)</recipients>" }.joined() + "<timeout>\(timeout)</timeout>\(extra)</notification></inb:sendNotification>"
    }

    struct HarnessError: Error, CustomStringConvertible { var description: String }
}
