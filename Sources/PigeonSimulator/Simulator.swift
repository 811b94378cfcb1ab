import Foundation
import PigeonCrypto

/// `pigeon simulate`: APNs, FCM, its OAuth token endpoint, RuStore push (under `/rustore`) and
/// Huawei Push Kit with its OAuth endpoint (under `/hms`), and a Web Push service that decrypts
/// what it receives (under `/webpush`), on one HTTP/2-over-TLS port, with fault injection and a
/// record of every accepted push. Admin calls on the same port:
/// `POST /simulator/webpush/subscriptions` (a browser's subscription to register),
/// `POST /simulator/wallet/devices`, `POST /simulator/wallet/refresh`, `GET /simulator/wallet/fetches`
/// (Wallet devices: see ``WalletSimulator``),
/// `PUT /simulator/apns/keys` (`{"<keyId>": {"environment": "production", "topics": ["<bundle id>"]}}`:
/// APNs keys restricted as Apple's developer account allows since 2025; requests to `localhost`
/// play the sandbox, to `127.0.0.1` production),
/// `POST /simulator/devices/keys` (a phone's key for confidential notifications: see
/// ``DeviceKeyring``), `GET /simulator/pushes` (JSON lines of accepted pushes, confidential ones
/// with what they opened to), `PUT /simulator/faults` (a JSON object
/// `{"<token>": {"fault": "unregistered", "times": 2}}`; `"*"` matches every other token;
/// `{"fault": "delay", "milliseconds": 40}` adds latency, `{"fault": "unavailableAfter", "milliseconds": 5000}` fails slowly), `GET /simulator/health`.
package final class Simulator: Sendable {
    package let apns: APNsSimulator
    package let fcm: FCMSimulator
    package let rustore: RuStoreSimulator
    package let huawei: HuaweiSimulator
    package let webPush: WebPushSimulator
    package let wallet: WalletSimulator
    /// The simulated phones' keys for confidential notifications.
    package let keyring: DeviceKeyring
    package let credentials: SimulatorCredentials
    private let server: H2Server

    package var port: UInt16 { server.port }
    /// TLS connections accepted so far (clients open new ones after a GOAWAY).
    package var connectionsAccepted: UInt64 { server.connectionsAccepted }
    package var baseURL: String { "https://127.0.0.1:\(server.port)" }
    /// The same port named `localhost`: APNs's sandbox (see ``APNsSimulator/Authentication/sandboxHosts``).
    package var sandboxBaseURL: String { "https://localhost:\(server.port)" }

    /// Makes or reuses credentials in `folder` and starts listening on `host:port`.
    /// `clock`: the APNs simulator's time, against which provider tokens' ages are checked.
    /// `walletCAFile`: the CA the simulated Wallets check a gateway's HTTPS listener against.
    package init(folder: URL, host: String = "127.0.0.1", port: UInt16, enforceRapidResetLimit: Bool = false,
                walletCAFile: String? = nil, clock: @escaping @Sendable () -> Date = Date.init) throws {
        let credentials = try SimulatorCredentials(folder: folder, tokenURL: "https://127.0.0.1:\(port)/token")
        let apnsKey = try PrivateKey(pem: try String(contentsOfFile: credentials.apnsKey, encoding: .utf8)).publicKey()
        let account = try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: credentials.serviceAccount))) as? [String: Any]
        let accountKey = try PrivateKey(pem: account?["private_key"] as? String ?? "").publicKey()
        let apns = APNsSimulator(authentication: .init(signingKeys: [SimulatorCredentials.keyId: (SimulatorCredentials.teamId, apnsKey)]), clock: clock)
        let fcm = FCMSimulator(accounts: [SimulatorCredentials.clientEmail: accountKey])
        let rustore = RuStoreSimulator(projectId: SimulatorCredentials.rustoreProjectId, serviceToken: SimulatorCredentials.rustoreServiceToken)
        let huawei = HuaweiSimulator(appId: SimulatorCredentials.hmsAppId, clientSecret: SimulatorCredentials.hmsClientSecret, clock: clock)
        let webPush = WebPushSimulator(clock: clock)
        let wallet = WalletSimulator(caFile: walletCAFile)
        let keyring = DeviceKeyring()
        apns.onAccepted { wallet.pushAccepted(token: $0.deviceToken, topic: $0.topic) }
        let origin = "https://127.0.0.1:\(port)"
        var configuration = H2Server.Configuration(certificateFile: credentials.serverCertificate, keyFile: credentials.serverKey, clientCAFile: credentials.caFile)
        configuration.host = host
        configuration.port = port
        configuration.enforceRapidResetLimit = enforceRapidResetLimit
        server = try H2Server(configuration: configuration) { request in
            Simulator.route(request, services: Services(apns: apns, fcm: fcm, rustore: rustore, huawei: huawei, webPush: webPush,
                                                        wallet: wallet, keyring: keyring, origin: origin))
        }
        self.keyring = keyring
        self.apns = apns
        self.fcm = fcm
        self.rustore = rustore
        self.huawei = huawei
        self.webPush = webPush
        self.wallet = wallet
        self.credentials = credentials
    }

    package func stop() {
        server.stop()
        wallet.stop()
    }

    /// The `server.conf` lines that point a gateway at this simulator.
    package var configurationSnippet: String {
        """
        apnsEndpoint = \(baseURL)
        apnsSandboxEndpoint = \(sandboxBaseURL)
        apnsChannelEndpoint = \(baseURL)
        apnsKeyPath = \(credentials.apnsKey)
        apnsKeyId = \(SimulatorCredentials.keyId)
        apnsTeamId = \(SimulatorCredentials.teamId)
        apnsTopic = \(SimulatorCredentials.topic)
        fcmServiceAccountPath = \(credentials.serviceAccount)
        fcmEndpoint = \(baseURL)
        fcmTokenEndpoint = \(baseURL)/token
        rustoreProjectId = \(SimulatorCredentials.rustoreProjectId)
        rustoreServiceToken = \(SimulatorCredentials.rustoreServiceToken)
        rustoreEndpoint = \(baseURL)/rustore
        hmsAppId = \(SimulatorCredentials.hmsAppId)
        hmsClientSecret = \(SimulatorCredentials.hmsClientSecret)
        hmsEndpoint = \(baseURL)/hms
        hmsTokenEndpoint = \(baseURL)/hms/oauth2/v3/token
        vapidPrivateKeyPath = \(credentials.vapidKey)
        vapidSubject = \(SimulatorCredentials.vapidSubject)
        webPushAllowedHosts = 127.0.0.1:\(server.port)
        tlsCaFile = \(credentials.caFile)
        """
    }

    /// The services one port plays.
    struct Services {
        var apns: APNsSimulator
        var fcm: FCMSimulator
        var rustore: RuStoreSimulator
        var huawei: HuaweiSimulator
        var webPush: WebPushSimulator
        var wallet: WalletSimulator
        var keyring: DeviceKeyring
        /// `https://127.0.0.1:<port>`.
        var origin: String
    }

    static func route(_ request: H2Server.Request, services: Services) -> H2Server.Response {
        let (apns, fcm, rustore, huawei, webPush) = (services.apns, services.fcm, services.rustore, services.huawei, services.webPush)
        if request.path.hasPrefix("/3/device/") { return apns.handle(request) }
        if SimulatedChannels.serves(request.path) { return apns.handleChannels(request) }
        if request.path.hasPrefix("/webpush/") {
            // The push service's origin is the one the subscription names (127.0.0.1 or localhost):
            // the VAPID token's audience must be it.
            return webPush.handle(request, id: String(request.path.dropFirst("/webpush/".count)),
                                  origin: request.authority.isEmpty ? services.origin : "https://" + request.authority)
        }
        if request.path.hasPrefix("/hms/") { return huawei.handle(request, path: String(request.path.dropFirst("/hms".count))) }
        if request.path.hasPrefix("/rustore/") { return rustore.handle(request, path: String(request.path.dropFirst("/rustore".count))) }
        if request.path.hasPrefix("/v1/projects/") { return fcm.handleSend(request) }
        if request.path == "/token" { return fcm.handleToken(request) }
        switch (request.method, request.path) {
        case ("GET", "/simulator/health"):
            return .json(200, #"{"status":"UP","apnsPushes":\#(apns.deliveries.count),"fcmPushes":\#(fcm.deliveries.count),"rustorePushes":\#(rustore.deliveries.count),"huaweiPushes":\#(huawei.deliveries.count),"webPushes":\#(webPush.deliveries.count)}"#)
        case ("GET", "/simulator/pushes"):
            return H2Server.Response(status: 200, headers: ["content-type": "application/x-ndjson"], body: Data(pushLines(services).utf8))
        case ("POST", "/simulator/devices/keys"):
            let (status, body) = services.keyring.handleAdmin(request.body)
            return .json(status, body)
        case ("POST", "/simulator/webpush/subscriptions"):
            guard let subscription = try? webPush.subscribe(baseURL: services.origin) else { return .json(500, #"{"error":"cannot make a subscription"}"#) }
            return H2Server.Response(status: 201, headers: ["content-type": "application/json"], body: subscription)
        case ("POST", "/simulator/wallet/devices"), ("POST", "/simulator/wallet/refresh"), ("GET", "/simulator/wallet/fetches"):
            return services.wallet.handleAdmin(request)
        case ("PUT", "/simulator/apns/keys"):
            guard let restrictions = APNsSimulator.KeyRestriction.parse(request.body) else {
                return .json(400, #"{"error":"expected {\"<keyId>\": {\"environment\": \"production|sandbox\", \"topics\": [\"<bundle id>\"]}} (null or {} lifts a restriction)"}"#)
            }
            for (keyId, restriction) in restrictions { apns.restrictKey(keyId, to: restriction) }
            return .json(200, #"{"keys":\#(restrictions.count)}"#)
        case ("PUT", "/simulator/faults"):
            guard let faults = FaultRules(json: request.body) else {
                return .json(400, #"{"error":"expected {\"<token>\": {\"fault\": \"unregistered|badDeviceToken|tooManyRequests|serviceUnavailable|internalError|dropConnection|goAway|lowerStreamLimit|delay|unavailableAfter\", \"times\": N, \"milliseconds\": N}}"}"#)
            }
            apns.setFaults(faults)
            fcm.setFaults(faults)
            rustore.setFaults(faults)
            huawei.setFaults(faults)
            webPush.setFaults(faults)
            return .json(200, #"{"rules":\#(faults.rules.count)}"#)
        default:
            return .json(404, #"{"reason":"BadPath"}"#)
        }
    }
}

extension Simulator {
    /// What `GET /simulator/pushes` answers.
    package var pushRecords: String {
        Self.pushLines(Services(apns: apns, fcm: fcm, rustore: rustore, huawei: huawei, webPush: webPush, wallet: wallet, keyring: keyring, origin: baseURL))
    }

    /// `/simulator/pushes`: a JSON line per accepted push, in the order they arrived, each with
    /// its time (`receivedAt`, seconds since 1970), service and app (APNs topic, FCM or RuStore
    /// project, Huawei app id), and for a confidential one what it opened to on its phone when
    /// the simulator holds the phone's key (``DeviceKeyring``).
    static func pushLines(_ services: Services) -> String {
        let keyring = services.keyring
        func opened(_ service: String, _ token: String, _ body: Data) -> String {
            keyring.opened(token: token, payload: DeviceKeyring.payload(service: service, body: body))
        }
        func head(_ service: String, _ date: Date, app: String?) -> String {
            #"{"service":"\#(service)","receivedAt":\#(String(format: "%.6f", date.timeIntervalSince1970)),"app":\#(app.map { "\"\(JSONText.escaped($0))\"" } ?? "null"),"#
        }
        var lines: [(at: Date, line: String)] = []
        for delivery in services.apns.deliveries {
            let payload = String(decoding: delivery.payload, as: UTF8.self)
            lines.append((delivery.receivedAt, head("apns", delivery.receivedAt, app: delivery.topic)
                + #""pushType":"\#(delivery.pushType ?? "alert")","environment":"\#(delivery.environment.rawValue)","keyId":\#(delivery.keyId.map { "\"\(JSONText.escaped($0))\"" } ?? "null"),"connection":\#(delivery.connectionId),"token":"\#(delivery.deviceToken)","apnsId":"\#(delivery.apnsId)","payload":\#(payload)\#(opened("apns", delivery.deviceToken, delivery.payload))}"#))
        }
        for delivery in services.fcm.deliveries {
            let message = String(decoding: delivery.message, as: UTF8.self)
            lines.append((delivery.receivedAt, head("fcm", delivery.receivedAt, app: delivery.project)
                + #""token":"\#(delivery.registrationToken)","target":"\#(delivery.target)","name":"\#(delivery.name)","message":\#(message)\#(opened("fcm", delivery.registrationToken, delivery.message))}"#))
        }
        for delivery in services.rustore.deliveries {
            let message = String(decoding: delivery.message, as: UTF8.self)
            lines.append((delivery.receivedAt, head("rustore", delivery.receivedAt, app: delivery.project)
                + #""token":"\#(delivery.token)","message":\#(message)\#(opened("rustore", delivery.token, delivery.message))}"#))
        }
        for delivery in services.webPush.deliveries {
            let message = String(decoding: delivery.plaintext, as: UTF8.self)
            lines.append((delivery.receivedAt, head("webpush", delivery.receivedAt, app: nil)
                + #""subscription":"\#(delivery.subscriptionId)","message":\#(message)\#(opened("webpush", delivery.subscriptionId, delivery.plaintext))}"#))
        }
        for delivery in services.huawei.deliveries {
            let message = String(decoding: delivery.message, as: UTF8.self)
            lines.append((delivery.receivedAt, head("huawei", delivery.receivedAt, app: delivery.appId)
                + #""token":"\#(delivery.token)","message":\#(message)\#(opened("huawei", delivery.token, delivery.message))}"#))
        }
        for broadcast in services.apns.channels.broadcasts {
            lines.append((broadcast.receivedAt, head("apns-broadcast", broadcast.receivedAt, app: broadcast.bundleId)
                + #""channelId":"\#(JSONText.escaped(broadcast.channelId))","payload":\#(String(decoding: broadcast.payload, as: UTF8.self))}"#))
        }
        // Arrival order across the services (a stable sort keeps each service's own order on ties).
        return lines.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map { $0.element.line + "\n" }.joined()
    }
}

/// JSON string contents, escaped.
enum JSONText {
    static func escaped(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [text])) ?? Data("[\"\"]".utf8)
        return String(decoding: data.dropFirst(2).dropLast(2), as: UTF8.self)
    }
}

extension APNsSimulator.KeyRestriction {
    /// Parses `{"<keyId>": {"environment": "production"|"sandbox", "topics": [...]}}`; a key whose
    /// value is `null` or `{}` is unrestricted (`nil`).
    static func parse(_ json: Data) -> [String: Self?]? {
        guard let object = (try? JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed])) as? [String: Any], object.count <= 100 else { return nil }
        var restrictions: [String: Self?] = [:]
        for (keyId, value) in object {
            if value is NSNull { restrictions[keyId] = .some(nil); continue }
            guard let entry = value as? [String: Any] else { return nil }
            var restriction = Self()
            if let name = entry["environment"] as? String {
                guard let environment = APNsSimulator.Environment(rawValue: name) else { return nil }
                restriction.environment = environment
            }
            if let topics = entry["topics"] {
                guard let list = topics as? [String] else { return nil }
                restriction.topics = Set(list)
            }
            restrictions[keyId] = restriction == Self() ? .some(nil) : restriction
        }
        return restrictions
    }
}

extension FaultRules {
    /// Parses `{"<token>": {"fault": "<name>", "times": N}}`.
    package init?(json: Data) {
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else { return nil }
        var rules: [String: Rule] = [:]
        for (token, value) in object {
            guard let entry = value as? [String: Any], let name = entry["fault"] as? String else { return nil }
            let fault: Fault
            switch name {
            case "unregistered": fault = .unregistered
            case "badDeviceToken": fault = .badDeviceToken
            case "tooManyRequests": fault = .tooManyRequests
            case "serviceUnavailable": fault = .serviceUnavailable
            case "internalError": fault = .internalError
            case "rejected": fault = .rejected
            case "keyRestricted": fault = .keyRestricted(reason: entry["reason"] as? String ?? "BadEnvironmentKeyIdInToken")
            case "dropConnection": fault = .dropConnection
            case "goAway": fault = .goAway
            case "lowerStreamLimit": fault = .lowerStreamLimit
            case "delay":
                guard let milliseconds = (entry["milliseconds"] as? NSNumber)?.intValue, (0...60_000).contains(milliseconds) else { return nil }
                fault = .delay(milliseconds: milliseconds)
            case "unavailableAfter":
                guard let milliseconds = (entry["milliseconds"] as? NSNumber)?.intValue, (0...60_000).contains(milliseconds) else { return nil }
                fault = .unavailableAfter(milliseconds: milliseconds)
            default: return nil
            }
            rules[token] = Rule(fault, times: (entry["times"] as? NSNumber)?.intValue)
        }
        self.init(rules)
    }
}
