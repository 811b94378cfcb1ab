import Foundation
import PigeonCrypto
import PushCore
import Synchronization

/// Answers FCM HTTP v1 (`POST /v1/projects/<project>/messages:send`) and Google's OAuth token
/// endpoint (`POST /token`, grant type jwt-bearer) the way Google does: access tokens are issued
/// only for RS256 assertions signed by a known service account, expire after an hour, and every
/// send must carry one; messages are checked for FCM's shape; fault rules apply per registration
/// token; accepted messages are recorded.
package final class FCMSimulator: Sendable {
    /// A message the simulator accepted.
    package struct Delivery: Sendable, Equatable {
        package var project: String
        /// The registration token, or the Firebase Installation ID when ``target`` is `fid`.
        package var registrationToken: String
        /// Which of FCM v1's targets addressed the device: `token` or `fid` (CONTRACT §9).
        package var target = "token"
        package var name: String
        package var message: Data
        /// When the simulator accepted it.
        package var receivedAt = Date()
    }

    package static let tokenLifetime: TimeInterval = 3600
    package static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    private struct State {
        var faults = FaultRules()
        var accessTokens: [String: Date] = [:]
        var delivered = DeliveryLog<Delivery>()
        var tokensIssued = 0
    }

    /// Service accounts allowed to get tokens, by client email.
    private let accounts: [String: PublicKey]
    private let state = Mutex(State())
    private let clock: @Sendable () -> Date

    package init(accounts: [String: PublicKey], clock: @escaping @Sendable () -> Date = Date.init) {
        self.accounts = accounts
        self.clock = clock
    }

    package func setFaults(_ faults: FaultRules) {
        state.withLock { $0.faults = faults }
    }

    package var deliveries: [Delivery] { state.withLock { $0.delivered.entries } }
    package var accessTokensIssued: Int { state.withLock { $0.tokensIssued } }

    // MARK: OAuth

    package func handleToken(_ request: H2Server.Request) -> H2Server.Response {
        func oauthError(_ error: String, _ description: String) -> H2Server.Response {
            .json(400, #"{"error":"\#(error)","error_description":"\#(description)"}"#)
        }
        let form = Self.parseForm(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return oauthError("unsupported_grant_type", "grant_type must be jwt-bearer")
        }
        guard let assertion = form["assertion"], let payload = assertion.split(separator: ".").dropFirst().first,
              let claimsData = Base64URL.decode(payload),
              let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any],
              let issuer = claims["iss"] as? String, let key = accounts[issuer],
              let verified = JSONWebToken.verify(assertion, key: key), verified.signatureValid,
              verified.header["alg"] as? String == "RS256"
        else {
            return oauthError("invalid_grant", "Invalid JWT Signature.")
        }
        let now = clock().timeIntervalSince1970
        guard let issued = (claims["iat"] as? NSNumber)?.doubleValue, let expires = (claims["exp"] as? NSNumber)?.doubleValue,
              expires > now, issued <= now + 60, expires - issued <= 3600
        else {
            return oauthError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        guard (claims["scope"] as? String)?.split(separator: " ").contains(Substring(Self.scope)) == true else {
            return oauthError("invalid_scope", "The firebase.messaging scope is required.")
        }
        let token = "sim-" + UUID().uuidString.lowercased()
        state.withLock { state in
            let cutoff = clock()
            state.accessTokens = state.accessTokens.filter { $0.value > cutoff }
            state.accessTokens[token] = cutoff.addingTimeInterval(Self.tokenLifetime)
            state.tokensIssued += 1
        }
        return .json(200, #"{"access_token":"\#(token)","expires_in":\#(Int(Self.tokenLifetime)),"token_type":"Bearer"}"#)
    }

    static func parseForm(_ body: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0) }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    // MARK: Send

    package func handleSend(_ request: H2Server.Request) -> H2Server.Response {
        let parts = request.path.split(separator: "/")
        guard request.method == "POST", parts.count == 4, parts[0] == "v1", parts[1] == "projects", parts[3] == "messages:send" else {
            return Self.error(404, "NOT_FOUND", "Requested entity was not found.")
        }
        let project = String(parts[2])
        guard let authorization = request.headers["authorization"], authorization.lowercased().hasPrefix("bearer "),
              let expiry = state.withLock({ $0.accessTokens[String(authorization.dropFirst(7))] }), expiry > clock()
        else {
            return Self.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        }
        guard let root = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any],
              let message = root["message"] as? [String: Any]
        else {
            return Self.error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", code: "INVALID_ARGUMENT")
        }
        let targets = ["token", "fid", "topic", "condition"].filter { message[$0] != nil }
        guard targets.count == 1, let target = targets.first, let token = message[target] as? String, !token.isEmpty, target == "token" || target == "fid" else {
            return Self.error(400, "INVALID_ARGUMENT", "Exactly one of token, fid, topic or condition must be specified.", code: "INVALID_ARGUMENT")
        }
        if target == "fid", FirebaseInstallationID.problem(token) != nil {
            return Self.error(400, "INVALID_ARGUMENT", "The fid is not a valid Firebase Installation ID", code: "INVALID_ARGUMENT")
        }
        if let data = message["data"] {
            guard let values = data as? [String: Any], values.values.allSatisfy({ $0 is String }) else {
                return Self.error(400, "INVALID_ARGUMENT", "Invalid value at 'message.data': values must be strings.", code: "INVALID_ARGUMENT")
            }
        }
        if let android = message["android"] as? [String: Any] {
            if let ttl = android["ttl"], !((ttl as? String)?.range(of: #"^\d+(\.\d{1,9})?s$"#, options: .regularExpression) != nil) {
                return Self.error(400, "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl'.", code: "INVALID_ARGUMENT")
            }
            if let priority = android["priority"], !["HIGH", "NORMAL"].contains(priority as? String ?? "") {
                return Self.error(400, "INVALID_ARGUMENT", "Invalid value at 'message.android.priority'.", code: "INVALID_ARGUMENT")
            }
        }
        if request.body.count > 4096 + 2048 {
            return Self.error(400, "INVALID_ARGUMENT", "Message is too big.", code: "INVALID_ARGUMENT")
        }
        switch state.withLock({ $0.faults.next(for: token) }) {
        case .unregistered?:
            return Self.error(404, "NOT_FOUND", "Requested entity was not found.", code: "UNREGISTERED")
        case .badDeviceToken?:
            return Self.error(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", code: "INVALID_ARGUMENT")
        case .tooManyRequests?:
            var response = Self.error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", code: "QUOTA_EXCEEDED")
            response.headers["retry-after"] = "1"
            return response
        case .serviceUnavailable?:
            return Self.error(503, "UNAVAILABLE", "The service is currently unavailable.", code: "UNAVAILABLE")
        case .unavailableAfter(let milliseconds)?:
            var response = Self.error(503, "UNAVAILABLE", "The service is currently unavailable.", code: "UNAVAILABLE")
            response.delayMilliseconds = milliseconds
            return response
        case .internalError?:
            return Self.error(500, "INTERNAL", "Internal error encountered.", code: "INTERNAL")
        case .rejected?, .keyRestricted?:
            return Self.error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", code: "INVALID_ARGUMENT")
        case .dropConnection?:
            return H2Server.Response(status: 0, action: .dropConnection)
        case .goAway?:
            var response = record(project: project, token: token, target: target, body: request.body)
            response.action = .goAway
            return response
        case .lowerStreamLimit?:
            var response = record(project: project, token: token, target: target, body: request.body)
            response.action = .lowerStreamLimit
            return response
        case .delay(let milliseconds)?:
            var response = record(project: project, token: token, target: target, body: request.body)
            response.delayMilliseconds = milliseconds
            return response
        case nil:
            return record(project: project, token: token, target: target, body: request.body)
        }
    }

    private func record(project: String, token: String, target: String, body: Data) -> H2Server.Response {
        let name = "projects/\(project)/messages/\(UUID().uuidString.lowercased())"
        state.withLock { $0.delivered.append(Delivery(project: project, registrationToken: token, target: target, name: name, message: body)) }
        return .json(200, #"{"name":"\#(name)"}"#)
    }

    /// Google's error body, with an `FcmError` detail when `code` is given.
    static func error(_ status: Int, _ statusName: String, _ message: String, code: String? = nil) -> H2Server.Response {
        var body = #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(statusName)""#
        if let code {
            body += #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(code)"}]"#
        }
        return .json(status, body + "}}")
    }
}
