import Foundation
import Synchronization

/// Answers RuStore push (`POST /v1/projects/<project>/messages:send`, mounted under `/rustore`
/// on the simulator's port) the way RuStore does: a static service token as `Authorization:
/// Bearer` (401 without it, 403 for another one), FCM v1's message shape with one `token`, 404
/// `NOT_FOUND` for a token that is gone; fault rules apply per token; accepted messages are
/// recorded.
package final class RuStoreSimulator: Sendable {
    /// A message the simulator accepted.
    package struct Delivery: Sendable, Equatable {
        package var project: String
        package var token: String
        package var message: Data
        /// When the simulator accepted it.
        package var receivedAt = Date()
    }

    private struct State {
        var faults = FaultRules()
        var delivered = DeliveryLog<Delivery>()
    }

    package let projectId: String
    package let serviceToken: String
    private let state = Mutex(State())

    package init(projectId: String, serviceToken: String) {
        self.projectId = projectId
        self.serviceToken = serviceToken
    }

    package func setFaults(_ faults: FaultRules) {
        state.withLock { $0.faults = faults }
    }

    package var deliveries: [Delivery] { state.withLock { $0.delivered.entries } }

    /// `path` is the request's path below `/rustore`.
    package func handle(_ request: H2Server.Request, path: String) -> H2Server.Response {
        let parts = path.split(separator: "/")
        guard request.method == "POST", parts.count == 4, parts[0] == "v1", parts[1] == "projects", parts[3] == "messages:send" else {
            return Self.error(404, "NOT_FOUND", "Requested entity was not found.")
        }
        guard let authorization = request.headers["authorization"], authorization.lowercased().hasPrefix("bearer ") else {
            return Self.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        }
        guard String(authorization.dropFirst(7)) == serviceToken, parts[2] == projectId else {
            return Self.error(403, "PERMISSION_DENIED", "The caller does not have permission.")
        }
        guard let root = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any],
              let message = root["message"] as? [String: Any], let token = message["token"] as? String, !token.isEmpty
        else {
            return Self.error(400, "INVALID_ARGUMENT", "Invalid JSON payload received: message.token is required.")
        }
        if let data = message["data"], !((data as? [String: Any])?.values.allSatisfy({ $0 is String }) ?? false) {
            return Self.error(400, "INVALID_ARGUMENT", "Invalid value at 'message.data': values must be strings.")
        }
        if let android = message["android"] as? [String: Any], let ttl = android["ttl"],
           (ttl as? String)?.range(of: #"^\d+(\.\d{1,9})?s$"#, options: .regularExpression) == nil {
            return Self.error(400, "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl'.")
        }
        switch state.withLock({ $0.faults.next(for: token) }) {
        case .unregistered?, .badDeviceToken?:
            return Self.error(404, "NOT_FOUND", "Requested entity was not found.")
        case .tooManyRequests?:
            var response = Self.error(429, "RESOURCE_EXHAUSTED", "Too many requests.")
            response.headers["retry-after"] = "1"
            return response
        case .serviceUnavailable?:
            return Self.error(503, "UNAVAILABLE", "The service is currently unavailable.")
        case .unavailableAfter(let milliseconds)?:
            var response = Self.error(503, "UNAVAILABLE", "The service is currently unavailable.")
            response.delayMilliseconds = milliseconds
            return response
        case .internalError?:
            return Self.error(500, "INTERNAL", "Internal error encountered.")
        case .rejected?, .keyRestricted?:
            return Self.error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
        case .dropConnection?:
            return H2Server.Response(status: 0, action: .dropConnection)
        case .goAway?:
            var response = record(token: token, body: request.body)
            response.action = .goAway
            return response
        case .lowerStreamLimit?:
            var response = record(token: token, body: request.body)
            response.action = .lowerStreamLimit
            return response
        case .delay(let milliseconds)?:
            var response = record(token: token, body: request.body)
            response.delayMilliseconds = milliseconds
            return response
        case nil:
            return record(token: token, body: request.body)
        }
    }

    private func record(token: String, body: Data) -> H2Server.Response {
        state.withLock { $0.delivered.append(Delivery(project: projectId, token: token, message: body)) }
        return .json(200, "{}")
    }

    static func error(_ status: Int, _ statusName: String, _ message: String) -> H2Server.Response {
        .json(status, #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(statusName)"}}"#)
    }
}
