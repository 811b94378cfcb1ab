import Foundation
import PigeonCore
import PigeonDomain
import PigeonHTTP

/// The phone's Live Activity calls (CONTRACT §9), behind the device's bearer token:
/// `PUT activities/start-tokens/{activityType}` `{"pushToStartToken"}`,
/// `PUT activities/{activityId}/token` `{"pushToken"}` and `DELETE activities/{activityId}`.
extension DeviceEndpoint {
    /// The route template and the answer of an `activities/…` call (`parts` after the prefix).
    package func activityCall(_ request: HTTPRequest, parts: [String]) async throws -> (String, HTTPResponse) {
        switch (request.method, parts.count) {
        case ("PUT", 3) where parts[1] == "start-tokens":
            return ("api_activity_start_token", try await saveStartToken(request, activityType: parts[2]))
        case ("PUT", 3) where parts[2] == "token":
            return ("api_activity_token", try await saveUpdateToken(request, activityId: parts[1]))
        case ("DELETE", 2):
            return ("api_activity_end", try await endActivity(request, activityId: parts[1]))
        case (_, 3) where parts[1] == "start-tokens" || parts[2] == "token":
            throw APIError.methodNotAllowed("PUT")
        case (_, 2):
            throw APIError.methodNotAllowed("DELETE")
        default:
            throw APIError(404, "NOT_FOUND", "no such device API call")
        }
    }

    private func saveStartToken(_ request: HTTPRequest, activityType raw: String) async throws -> HTTPResponse {
        let (store, device) = try await activityDevice(request)
        let activityType = try Self.pathIdentifier(raw, name: "activity type")
        let token = try Self.apnsToken(JSONFields(request.body), "pushToStartToken")
        guard try await store.saveStartToken(deviceRowId: device.id, activityType: activityType, token: token) else {
            throw APIError.badRequest("TOO_MANY_ACTIVITY_TYPES",
                                      "this device already has push-to-start tokens for \(ActivityFields.maximumStartTokensPerDevice) activity types")
        }
        logger.info("push-to-start token saved", metadata: ["user": device.userId, "activityType": activityType, "token": Redaction.token(token)])
        return JSONResponse.make(200, ["activityType": activityType, "state": "SAVED"])
    }

    private func saveUpdateToken(_ request: HTTPRequest, activityId raw: String) async throws -> HTTPResponse {
        let (store, device) = try await activityDevice(request)
        let activityId = try Self.pathIdentifier(raw, name: "activity id")
        let token = try Self.apnsToken(JSONFields(request.body), "pushToken")
        switch try await store.saveUpdateToken(activityId: activityId, deviceRowId: device.id, token: token) {
        case .saved:
            events.activityQueued()
            logger.info("activity update token saved", metadata: ["user": device.userId, "activity": activityId, "token": Redaction.token(token)])
            return JSONResponse.make(200, ["activityId": activityId, "state": "RUNNING"])
        case .notFound:
            throw APIError(404, "ACTIVITY_NOT_FOUND", "no activity with this id was started on this device")
        case .ended:
            throw APIError(410, "ACTIVITY_ENDED", "this activity has ended on this device")
        }
    }

    private func endActivity(_ request: HTTPRequest, activityId raw: String) async throws -> HTTPResponse {
        guard let activities else { throw APIError(404, "NOT_FOUND", "no such device API call") }
        let device = try await authenticate(request)
        let activityId = try Self.pathIdentifier(raw, name: "activity id")
        guard try await activities.endedOnDevice(activityId: activityId, deviceRowId: device.id) else {
            throw APIError(404, "ACTIVITY_NOT_FOUND", "no activity with this id was started on this device")
        }
        logger.info("activity ended on the phone", metadata: ["user": device.userId, "activity": activityId])
        return HTTPResponse(status: 204, headers: [], body: Data())
    }

    /// The store and the authenticated iPhone (Live Activities are iOS's).
    private func activityDevice(_ request: HTTPRequest) async throws -> (any ActivityTokenRecording, AuthenticatedDevice) {
        guard let activities else { throw APIError(404, "NOT_FOUND", "no such device API call") }
        let device = try await authenticate(request)
        guard device.identity.platform == .ios else {
            throw APIError(400, "NOT_AN_IPHONE", "Live Activity tokens come from iPhones; Android devices get the activity's data messages")
        }
        return (activities, device)
    }

    private static func pathIdentifier(_ raw: String, name: String) throws(APIError) -> String {
        let value = raw.removingPercentEncoding ?? ""
        if let problem = ActivityFields.identifierProblem(value, name: "the \(name) in the path") {
            throw .badRequest("INVALID_ACTIVITY", problem)
        }
        return value
    }

    private static func apnsToken(_ fields: JSONFields, _ name: String) throws(APIError) -> String {
        let token = try fields.string(name, maxLength: PushTokenFormat.apnsLength.upperBound)
        if let problem = PushTokenFormat.problem(with: token, for: .ios) { throw .badRequest("INVALID_PUSH_TOKEN", "'\(name)': \(problem)") }
        return token
    }
}
