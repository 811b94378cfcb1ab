import Foundation
import PushCore
import Synchronization

/// Answers Huawei Push Kit (mounted under `/hms` on the simulator's port) the way Huawei does:
/// `POST /oauth2/v3/token` issues access tokens for the client-credentials grant of the known app
/// (an hour each), `POST /v1/<appId>/messages:send` takes a message with a list of tokens and a
/// valid access token (HTTP 401, 80200003 otherwise), checks Huawei's message shape, and answers
/// with Huawei's result codes: 80000000, 80100000 naming the illegal tokens when only some are,
/// 80300007 when all are; fault rules apply per token; accepted messages are recorded per token.
package final class HuaweiSimulator: Sendable {
    /// A message the simulator accepted for one token.
    package struct Delivery: Sendable, Equatable {
        package var appId: String
        package var token: String
        package var message: Data
        /// When the simulator accepted it.
        package var receivedAt = Date()
    }

    private struct State {
        var faults = FaultRules()
        var accessTokens: [String: Date] = [:]
        var tokensIssued = 0
        var delivered = DeliveryLog<Delivery>()
    }

    package let appId: String
    package let clientSecret: String
    private let state = Mutex(State())
    private let clock: @Sendable () -> Date

    package init(appId: String, clientSecret: String, clock: @escaping @Sendable () -> Date = Date.init) {
        self.appId = appId
        self.clientSecret = clientSecret
        self.clock = clock
    }

    package func setFaults(_ faults: FaultRules) {
        state.withLock { $0.faults = faults }
    }

    package var deliveries: [Delivery] { state.withLock { $0.delivered.entries } }
    package var accessTokensIssued: Int { state.withLock { $0.tokensIssued } }

    /// Makes every access token issued so far expired, as an hour passing would.
    package func expireAccessTokens() {
        state.withLock { $0.accessTokens.removeAll() }
    }

    /// `path` is the request's path below `/hms`.
    package func handle(_ request: H2Server.Request, path: String) -> H2Server.Response {
        if path == "/oauth2/v3/token" { return token(request) }
        let parts = path.split(separator: "/")
        guard request.method == "POST", parts.count == 3, parts[0] == "v1", parts[2] == "messages:send" else {
            return .json(404, #"{"code":"80100001","msg":"Service not found"}"#)
        }
        guard let authorization = request.headers["authorization"], authorization.lowercased().hasPrefix("bearer "),
              let expiry = state.withLock({ $0.accessTokens[String(authorization.dropFirst(7))] }), expiry > clock()
        else {
            return .json(401, #"{"code":"80200003","msg":"Oauth token expired"}"#)
        }
        guard parts[1] == appId else { return .json(401, #"{"code":"80200001","msg":"Oauth authentication error"}"#) }
        guard let root = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any],
              let message = root["message"] as? [String: Any], let tokens = message["token"] as? [String],
              (1...1000).contains(tokens.count)
        else {
            return .json(400, #"{"code":"80300010","msg":"the number of tokens in the message body exceeds the default value"}"#)
        }
        if let data = message["data"], !(data is String) {
            return .json(400, #"{"code":"80100003","msg":"Illegal payload, data must be a string"}"#)
        }
        if let android = message["android"] as? [String: Any] {
            if let urgency = android["urgency"], !["HIGH", "NORMAL"].contains(urgency as? String ?? "") {
                return .json(400, #"{"code":"80100003","msg":"Illegal payload, urgency must be HIGH or NORMAL"}"#)
            }
            if let category = android["category"], !HuaweiCategories.known.contains(category as? String ?? "") {
                return .json(400, #"{"code":"80100003","msg":"Illegal payload, category is invalid"}"#)
            }
            if let ttl = android["ttl"], (ttl as? String)?.range(of: #"^\d+(\.\d{1,9})?s$"#, options: .regularExpression) == nil {
                return .json(400, #"{"code":"80100003","msg":"Illegal payload, ttl is invalid"}"#)
            }
            if let notification = android["notification"] as? [String: Any],
               ((notification["click_action"] as? [String: Any])?["type"] as? Int).map({ (1...4).contains($0) }) != true {
                return .json(400, #"{"code":"80100003","msg":"Illegal payload, click_action.type is mandatory"}"#)
            }
        }
        var illegal: [String] = []
        var accepted: [String] = []
        for token in tokens {
            switch state.withLock({ $0.faults.next(for: token) }) {
            case .unregistered?, .badDeviceToken?:
                illegal.append(token)
            case .tooManyRequests?, .serviceUnavailable?:
                return .json(503, #"{"code":"80000001","msg":"traffic control"}"#)
            case .internalError?:
                return .json(500, #"{"code":"81000001","msg":"System inner error"}"#)
            case .rejected?:
                return .json(400, #"{"code":"80100003","msg":"Illegal payload"}"#)
            case .dropConnection?:
                return H2Server.Response(status: 0, action: .dropConnection)
            default:
                accepted.append(token)
            }
        }
        state.withLock { state in
            for token in accepted { state.delivered.append(Delivery(appId: appId, token: token, message: request.body)) }
        }
        if accepted.isEmpty {
            return .json(400, #"{"code":"80300007","msg":"All the tokens are invalid","requestId":"\#(UUID().uuidString)"}"#)
        }
        if !illegal.isEmpty {
            let detail = String(decoding: try! JSONSerialization.data(withJSONObject: ["success": accepted.count, "failure": illegal.count, "illegal_tokens": illegal]), as: UTF8.self)
            let body = try! JSONSerialization.data(withJSONObject: ["code": "80100000", "msg": detail, "requestId": UUID().uuidString])
            return H2Server.Response(status: 200, headers: ["content-type": "application/json"], body: body)
        }
        return .json(200, #"{"code":"80000000","msg":"Success","requestId":"\#(UUID().uuidString)"}"#)
    }

    private func token(_ request: H2Server.Request) -> H2Server.Response {
        let form = FCMSimulator.parseForm(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "client_credentials" else {
            return .json(400, #"{"error":1102,"sub_error":20003,"error_description":"unsupported grant type"}"#)
        }
        guard form["client_id"] == appId, form["client_secret"] == clientSecret else {
            return .json(401, #"{"error":1101,"sub_error":20002,"error_description":"invalid client secret"}"#)
        }
        let token = "hms-" + UUID().uuidString.lowercased()
        state.withLock { state in
            state.accessTokens[token] = clock().addingTimeInterval(3600)
            state.tokensIssued += 1
        }
        return .json(200, #"{"access_token":"\#(token)","expires_in":3600,"token_type":"Bearer"}"#)
    }
}
