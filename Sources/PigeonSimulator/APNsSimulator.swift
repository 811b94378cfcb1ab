import Foundation
import PigeonCrypto
import Synchronization

/// Answers `POST /3/device/<token>` the way APNs does: it checks the path, the headers, the
/// payload size and the authentication (an ES256 provider token or a verified client
/// certificate), applies the fault rules configured for the device token, and records every
/// push it accepts.
package final class APNsSimulator: Sendable {
    /// How the simulator authenticates providers.
    package struct Authentication: Sendable {
        /// Keys for provider tokens, by key id (`kid`), and the team each belongs to.
        package var signingKeys: [String: (team: String, key: PublicKey)]
        /// Accept connections whose client certificate verified against the simulator's CA.
        package var acceptClientCertificates: Bool

        /// Hosts (of a request's `:authority`) that play APNs's sandbox; every other host is
        /// production. Apple's are two host names; the simulator's one port tells them apart by
        /// the name the client used (`localhost` for sandbox by default, `127.0.0.1` for production).
        package var sandboxHosts: Set<String>

        package init(signingKeys: [String: (team: String, key: PublicKey)] = [:], acceptClientCertificates: Bool = true,
                     sandboxHosts: Set<String> = ["localhost"]) {
            self.signingKeys = signingKeys
            self.acceptClientCertificates = acceptClientCertificates
            self.sandboxHosts = sandboxHosts
        }
    }

    /// APNs's two environments.
    package enum Environment: String, Sendable, Equatable {
        case production, sandbox
    }

    /// What a key may be used for (keys restricted since February 2025): one environment, some
    /// topics (bundle ids; a topic derived from one, `<bundle>.voip` or
    /// `<bundle>.push-type.liveactivity`, goes with it). `nil`: any.
    package struct KeyRestriction: Sendable, Equatable {
        package var environment: Environment?
        package var topics: Set<String>?

        package init(environment: Environment? = nil, topics: Set<String>? = nil) {
            self.environment = environment
            self.topics = topics
        }

        /// Apple's 403 reason when a push to `environment` on `topic` is outside the restriction.
        func refusal(environment requested: Environment, topic: String?) -> String? {
            if let environment, environment != requested { return "BadEnvironmentKeyIdInToken" }
            if let topics, let topic, !topics.contains(where: { topic == $0 || topic.hasPrefix($0 + ".") }) {
                return "UnrelatedKeyIdInToken"
            }
            return nil
        }
    }

    /// A push the simulator accepted.
    package struct Delivery: Sendable, Equatable {
        package var deviceToken: String
        package var apnsId: String
        package var topic: String?
        package var priority: String?
        package var collapseId: String?
        package var expiration: String?
        /// `apns-push-type` (alert, liveactivity, widgets, …).
        package var pushType: String?
        package var payload: Data
        /// The environment the push was sent to (by the host the client named).
        package var environment: Environment = .production
        /// The provider token's key id; `nil` for a client certificate.
        package var keyId: String?
        /// The connection it came on (the server's count of accepted connections).
        package var connectionId: UInt64 = 0
        /// When the simulator accepted it.
        package var receivedAt = Date()
    }

    private struct State {
        var faults = FaultRules()
        var delivered = DeliveryLog<Delivery>()
        /// The token each connection last presented for each key, and when it was first seen.
        var lastToken: [String: (token: String, issuedAt: Date)] = [:]
        var tokenRefreshes = 0
        /// Provider tokens whose signature checked out: key id and issue time. Apple, too,
        /// verifies a connection's token once, not per request.
        var verifiedTokens: [String: (keyId: String, issuedAt: Double)] = [:]
        /// Tokens refused as expired whatever their age (``expireProviderTokens()``).
        var expiredTokens: Set<String> = []
        /// Told of every accepted push (the Wallet simulator).
        var listeners: [@Sendable (Delivery) -> Void] = []
        /// Keys added after start (``addSigningKey(id:team:key:)``), beside the configured ones.
        var addedKeys: [String: (team: String, key: PublicKey)] = [:]
        /// Restricted keys, by key id.
        var restrictions: [String: KeyRestriction] = [:]
        /// The team and environment each connection is bound to by its first token push: Apple
        /// refuses a later push of another team or environment on it.
        var connectionBindings: [UInt64: (team: String, environment: Environment)] = [:]
    }

    package static let maximumPayloadBytes = 4096

    private let authentication: Authentication
    private let state = Mutex(State())
    /// Each Live Activity token's newest `aps.timestamp`, and the pushes that were not newer.
    package let activityOrder = ActivityOrder()
    /// Broadcast channels and the broadcasts sent on them (CONTRACT §9).
    package let channels = SimulatedChannels()
    private let clock: @Sendable () -> Date

    package init(authentication: Authentication, clock: @escaping @Sendable () -> Date = Date.init) {
        self.authentication = authentication
        self.clock = clock
    }

    /// From now on every provider token seen so far is refused with `ExpiredProviderToken`,
    /// however young — as APNs sometimes does (a clock apart, a key rotated). The token that
    /// replaces a refused one is not counted as a too-frequent update.
    package func expireProviderTokens() {
        state.withLock { state in
            state.expiredTokens.formUnion(state.verifiedTokens.keys)
            state.expiredTokens.formUnion(state.lastToken.values.map(\.token))
        }
    }

    /// Accepts provider tokens of another key from now on (a second app's, its own team).
    package func addSigningKey(id: String, team: String, key: PublicKey) {
        state.withLock { $0.addedKeys[id] = (team, key) }
    }

    /// Restricts key `id` to an environment or topics, as a key made in Apple's developer
    /// account since February 2025 can be; `nil` lifts the restriction.
    package func restrictKey(_ id: String, to restriction: KeyRestriction?) {
        state.withLock { $0.restrictions[id] = restriction }
    }

    /// The environment a request was sent to, by the host its client named.
    package func environment(of request: H2Server.Request) -> Environment {
        let host = request.authority.hasPrefix("[")
            ? String(request.authority.prefix { $0 != "]" }.dropFirst())
            : String(request.authority.prefix { $0 != ":" })
        return authentication.sandboxHosts.contains(host.lowercased()) ? .sandbox : .production
    }

    /// Calls `listener` with every push accepted from now on (on the server's thread: it must be quick).
    package func onAccepted(_ listener: @escaping @Sendable (Delivery) -> Void) {
        state.withLock { $0.listeners.append(listener) }
    }

    /// Replaces the fault rules.
    package func setFaults(_ faults: FaultRules) {
        state.withLock { $0.faults = faults }
    }

    /// Pushes accepted so far (oldest first; bounded, see ``DeliveryLog``).
    package var deliveries: [Delivery] { state.withLock { $0.delivered.entries } }

    /// How many times a new provider token replaced an earlier one.
    package var providerTokenRefreshes: Int { state.withLock { $0.tokenRefreshes } }

    /// The broadcast channel API (management and broadcasts), authenticated like pushes.
    package func handleChannels(_ request: H2Server.Request) -> H2Server.Response {
        if let failure = authenticate(request) { return .json(failure.status, #"{"reason":"\#(failure.reason)"}"#) }
        return channels.handle(request)
    }

    package func handle(_ request: H2Server.Request) -> H2Server.Response {
        let apnsId = request.headers["apns-id"] ?? UUID().uuidString.lowercased()
        func reject(_ status: Int, _ reason: String, timestamp: Date? = nil) -> H2Server.Response {
            var body = #"{"reason":"\#(reason)""#
            if let timestamp { body += #","timestamp":\#(Int64(timestamp.timeIntervalSince1970 * 1000))"# }
            return .json(status, body + "}", headers: ["apns-id": apnsId])
        }
        guard request.method == "POST" else { return reject(405, "MethodNotAllowed") }
        let prefix = "/3/device/"
        guard request.path.hasPrefix(prefix) else { return reject(404, "BadPath") }
        let token = String(request.path.dropFirst(prefix.count))
        guard !token.isEmpty, token.count <= 200, token.allSatisfy(\.isHexDigit) else { return reject(400, "BadDeviceToken") }

        if let failure = authenticate(request, topic: request.headers["apns-topic"]) { return reject(failure.status, failure.reason) }
        // 64 zeros is no device's token (`check-config --connect` probes credentials with it):
        // answered as APNs answers a token it does not know, after the credentials passed.
        if token.count == 64, token.allSatisfy({ $0 == "0" }) { return reject(400, "BadDeviceToken") }
        if let priority = request.headers["apns-priority"], !["10", "5", "1"].contains(priority) { return reject(400, "BadPriority") }
        if let pushType = request.headers["apns-push-type"],
           !["alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets", "controls"].contains(pushType) {
            return reject(400, "InvalidPushType")
        }
        if let expiration = request.headers["apns-expiration"], Int64(expiration) == nil { return reject(400, "BadExpirationDate") }
        if let collapseId = request.headers["apns-collapse-id"], collapseId.utf8.count > 64 { return reject(400, "BadCollapseId") }
        if request.headers["apns-topic"] == nil && request.clientSubject == nil { return reject(400, "MissingTopic") }
        guard !request.body.isEmpty else { return reject(400, "PayloadEmpty") }
        guard request.body.count <= Self.maximumPayloadBytes else { return reject(413, "PayloadTooLarge") }
        guard let payload = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] else { return reject(400, "BadPayload") }
        if let problem = NewerPushTypes.problem(request.headers, payload: payload) { return reject(400, problem) }
        if request.headers["apns-push-type"] == "liveactivity", let timestamp = NewerPushTypes.timestamp(payload) {
            activityOrder.note(token: token, timestamp: timestamp)
        }

        switch state.withLock({ $0.faults.next(for: token) }) {
        case .none:
            break
        case .unregistered?:
            return reject(410, "Unregistered", timestamp: clock())
        case .badDeviceToken?:
            return reject(400, "BadDeviceToken")
        case .tooManyRequests?:
            var response = reject(429, "TooManyRequests")
            response.headers["retry-after"] = "1"
            return response
        case .serviceUnavailable?:
            return reject(503, "ServiceUnavailable")
        case .unavailableAfter(let milliseconds)?:
            var response = reject(503, "ServiceUnavailable")
            response.delayMilliseconds = milliseconds
            return response
        case .internalError?:
            return reject(500, "InternalServerError")
        case .rejected?:
            return reject(413, "PayloadTooLarge")
        case .keyRestricted(let reason)?:
            return reject(403, reason)
        case .dropConnection?:
            return H2Server.Response(status: 0, action: .dropConnection)
        case .goAway?:
            record(token: token, apnsId: apnsId, request: request)
            return H2Server.Response(status: 200, headers: ["apns-id": apnsId], action: .goAway)
        case .lowerStreamLimit?:
            record(token: token, apnsId: apnsId, request: request)
            return H2Server.Response(status: 200, headers: ["apns-id": apnsId], action: .lowerStreamLimit)
        case .delay(let milliseconds)?:
            record(token: token, apnsId: apnsId, request: request)
            return H2Server.Response(status: 200, headers: ["apns-id": apnsId], delayMilliseconds: milliseconds)
        }
        record(token: token, apnsId: apnsId, request: request)
        return H2Server.Response(status: 200, headers: ["apns-id": apnsId])
    }

    private func record(token: String, apnsId: String, request: H2Server.Request) {
        let keyId = request.headers["authorization"].flatMap { authorization in
            state.withLock { $0.verifiedTokens[String(authorization.dropFirst(7))]?.keyId }
        }
        let delivery = Delivery(
            deviceToken: token, apnsId: apnsId, topic: request.headers["apns-topic"],
            priority: request.headers["apns-priority"], collapseId: request.headers["apns-collapse-id"],
            expiration: request.headers["apns-expiration"], pushType: request.headers["apns-push-type"], payload: request.body,
            environment: environment(of: request), keyId: keyId, connectionId: request.connectionId)
        let listeners = state.withLock { state in
            state.delivered.append(delivery)
            return state.listeners
        }
        for listener in listeners { listener(delivery) }
    }

    /// Checks a provider token's header, signature and issuer; remembers it when valid.
    private func verify(_ token: String) -> (keyId: String, issuedAt: Double)? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerData = Base64URL.decode(parts[0]),
              let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
              let keyId = header["kid"] as? String, header["alg"] as? String == "ES256",
              let signer = authentication.signingKeys[keyId] ?? state.withLock({ $0.addedKeys[keyId] }),
              let verified = JSONWebToken.verify(token, key: signer.key), verified.signatureValid,
              verified.claims["iss"] as? String == signer.team,
              let issuedAt = (verified.claims["iat"] as? NSNumber)?.doubleValue
        else { return nil }
        state.withLock { state in
            if state.verifiedTokens.count >= 1000 { state.verifiedTokens.removeAll() }
            state.verifiedTokens[token] = (keyId, issuedAt)
        }
        return (keyId, issuedAt)
    }

    /// `nil` when the request is authenticated, else Apple's status and reason. With a provider
    /// token: its key's restriction (environment, `topic`) is checked, and so is the connection's
    /// binding to the team and environment of its first push.
    func authenticate(_ request: H2Server.Request, topic: String? = nil) -> (status: Int, reason: String)? {
        guard let authorization = request.headers["authorization"] else {
            if authentication.acceptClientCertificates && request.clientSubject != nil { return nil }
            return (403, "MissingProviderToken")
        }
        guard authorization.hasPrefix("bearer ") || authorization.hasPrefix("Bearer ") else { return (403, "InvalidProviderToken") }
        let token = String(authorization.dropFirst(7))
        guard let (keyId, issuedAt) = state.withLock({ $0.verifiedTokens[token] }) ?? verify(token) else {
            return (403, "InvalidProviderToken")
        }
        let environment = environment(of: request)
        let team = authentication.signingKeys[keyId]?.team ?? state.withLock { $0.addedKeys[keyId]?.team } ?? ""
        let bound = state.withLock { state -> (status: Int, reason: String)? in
            if let reason = state.restrictions[keyId]?.refusal(environment: environment, topic: topic) { return (403, reason) }
            if let binding = state.connectionBindings[request.connectionId] {
                // Another team's token, or the other environment, on a connection bound to one.
                if binding.team != team { return (403, "InvalidProviderToken") }
                if binding.environment != environment { return (403, "BadEnvironmentKeyIdInToken") }
            } else {
                if state.connectionBindings.count >= 10_000 { state.connectionBindings.removeAll() }
                state.connectionBindings[request.connectionId] = (team, environment)
            }
            return nil
        }
        if let bound { return bound }
        let now = clock()
        let issued = Date(timeIntervalSince1970: issuedAt)
        let slot = "\(request.connectionId)/\(keyId)"
        let refused = state.withLock { state -> Bool in
            guard state.expiredTokens.contains(token) else { return false }
            if state.lastToken[slot]?.token == token { state.lastToken[slot] = nil }
            return true
        }
        if refused || now.timeIntervalSince(issued) > 3600 { return (403, "ExpiredProviderToken") }
        if issued.timeIntervalSince(now) > 60 { return (403, "InvalidProviderToken") }
        // Token updates are counted per connection: several provider servers may share a key,
        // each with its own token, but one connection must not change tokens within 20 minutes.
        return state.withLock { state -> (status: Int, reason: String)? in
            guard let previous = state.lastToken[slot], previous.token != token else {
                if state.lastToken[slot] == nil { state.lastToken[slot] = (token, now) }
                return nil
            }
            if now.timeIntervalSince(previous.issuedAt) < 20 * 60 { return (429, "TooManyProviderTokenUpdates") }
            state.lastToken[slot] = (token, now)
            state.tokenRefreshes += 1
            return nil
        }
    }
}
