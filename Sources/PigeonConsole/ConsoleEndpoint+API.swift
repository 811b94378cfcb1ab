import Foundation
import PigeonCore
import PigeonDomain
import PigeonHTTP

/// The console's JSON API (CONTRACT §5, §10) for a bank's support tooling: an operator's session
/// (with its CSRF token in `X-CSRF-Token` for actions) or HTTP Basic with the operator's own
/// credentials; reads for every role, actions for the roles that hold them.
extension ConsoleEndpoint {
    /// The longest id a path segment may carry, once decoded.
    static let maximumSegmentBytes = 256

    func api(_ request: HTTPRequest) async -> (String, HTTPResponse) {
        let caller: Caller
        switch await authenticate(request) {
        case .success(let found): caller = found
        case .failure(let refusal): return ("api_refused", refusal.response)
        }
        guard let segments = Self.apiSegments(request.path) else {
            return ("api", APIError(404, "NOT_FOUND", "no such console API call").response)
        }
        let actor = ConsoleActions.Actor(person: caller.person, address: request.peer)
        do {
            switch (request.method, segments.count, segments.first) {
            case ("GET", 2, "notifications"):
                let page = ConsolePaging.pageNumber(FormFields.query(request.query)["page"])
                guard let view = try await data.notification(segments[1], page: page) else {
                    return ("api_notification", APIError(404, "NOTIFICATION_NOT_FOUND", "no notification with this id").response)
                }
                return ("api_notification", JSONResponse.make(200, ConsoleJSON.notification(view, page: page)))
            case ("GET", 2, "users"):
                guard let view = try await data.user(segments[1]) else { return ("api_user", APIError(404, "NOT_FOUND", "no user").response) }
                return ("api_user", JSONResponse.make(200, ConsoleJSON.user(segments[1], view)))
            case ("GET", 1, "audit"):
                return ("api_audit", try await auditPage(request))
            case ("POST", 3, "notifications") where segments[2] == "reveal":
                if let refusal = await refusal(caller, request, needs: .reveal, target: segments[1]) { return ("api_reveal", refusal) }
                switch try await actions.reveal(segments[1], by: actor) {
                case .notFound: return ("api_reveal", APIError(404, "NOTIFICATION_NOT_FOUND", "no notification with this id").response)
                case .confidential:
                    return ("api_reveal", APIError(410, "CONTENT_GONE", "a confidential notification's content is for the phone alone and is never shown").response)
                case .revealed(let view): return ("api_reveal", JSONResponse.make(200, ConsoleJSON.revealed(view)))
                }
            case ("POST", 3, "users") where segments[2] == "test-push":
                if let refusal = await refusal(caller, request, needs: .testPush, target: segments[1]) { return ("api_test_push", refusal) }
                let results = try await actions.testPush(user: segments[1], by: actor)
                return ("api_test_push", JSONResponse.make(200, ["user": segments[1], "devices": results.map {
                    ["deviceId": $0.deviceId, "state": $0.state, "lastError": $0.lastError ?? NSNull()] as [String: Any]
                }]))
            case ("POST", 5, "users") where segments[2] == "devices" && segments[4] == "revoke":
                if let refusal = await refusal(caller, request, needs: .revoke, target: "\(segments[1]) device \(segments[3])") { return ("api_revoke", refusal) }
                return ("api_revoke", try await revoke(user: segments[1], deviceId: segments[3], body: request.body, actor: actor))
            case (_, 1, "audit"), (_, 2, "notifications"), (_, 2, "users"):
                return ("api", APIError(405, "METHOD_NOT_ALLOWED", "use GET", allow: "GET").response)
            case (_, 3, "notifications") where segments[2] == "reveal", (_, 3, "users") where segments[2] == "test-push",
                 (_, 5, "users") where segments[2] == "devices" && segments[4] == "revoke":
                return ("api", APIError(405, "METHOD_NOT_ALLOWED", "use POST", allow: "POST").response)
            default:
                return ("api", APIError(404, "NOT_FOUND", "no such console API call").response)
            }
        } catch {
            logger.error("console API call failed", metadata: ["path": String(request.path.prefix(100)), "error": "\(error)"])
            return ("api", APIError(503, "UNAVAILABLE", "the console cannot read or write the database right now").response)
        }
    }

    /// Who calls: the operator, and whether through a session (whose CSRF token an action must
    /// carry) or HTTP Basic.
    struct Caller {
        var person: ConsoleOperator
        var csrfToken: String?
    }

    private func authenticate(_ request: HTTPRequest) async -> Result<Caller, APIError> {
        do {
            if let (_, session) = try await currentSession(request) { return .success(Caller(person: session.person, csrfToken: session.csrfToken)) }
        } catch {
            logger.error("console: sessions cannot be read", metadata: ["error": "\(error)"])
            return .failure(APIError(503, "UNAVAILABLE", "the console cannot read the database right now"))
        }
        if let header = request.header("authorization") {
            if let retryAfter = apiSignInLimit.exhausted(request.peer) {
                return .failure(APIError(429, "TOO_MANY_ATTEMPTS", "too many wrong credentials from this address; retry in \(retryAfter) s", retryAfter: retryAfter))
            }
            if let (username, password) = BasicAuthentication.credentials(header) {
                switch await actions.signIn(username: username, password: password, address: request.peer, channel: "api", recordSuccess: false) {
                case .accepted(let person): return .success(Caller(person: person, csrfToken: nil))
                case .unavailable: return .failure(APIError(503, "DIRECTORY_UNAVAILABLE", "the operator's account cannot be checked right now: the directory does not answer"))
                case .refused: break
                }
            }
            _ = apiSignInLimit.take(request.peer)
        }
        var refusal = APIError(401, "UNAUTHORIZED", "sign in to the console or send your console credentials (HTTP Basic)")
        refusal.wwwAuthenticate = #"Basic realm="pigeon console""#
        return .failure(refusal)
    }

    /// Why an action is refused to `caller`, or nil: a role without the right (403
    /// `FORBIDDEN_ROLE`), a body that is not declared JSON (a form of another site cannot send
    /// one), or a session's call without its CSRF token.
    private func refusal(_ caller: Caller, _ request: HTTPRequest, needs right: ConsoleRole.Right, target: String) async -> HTTPResponse? {
        guard caller.person.role.allows(right) else {
            await actions.refused(right, target: target, by: ConsoleActions.Actor(person: caller.person, address: request.peer))
            return APIError(403, "FORBIDDEN_ROLE", "your role (\(caller.person.role.rawValue)) does not allow this; it needs \(ConsoleRole.least(for: right).rawValue)").response
        }
        let type = request.header("content-type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/json" else {
            return APIError(415, "UNSUPPORTED_MEDIA_TYPE", "console actions take Content-Type: application/json").response
        }
        if let token = caller.csrfToken {
            guard let sent = request.header("x-csrf-token"), BasicAuthentication.constantTimeEqual(Array(sent.utf8), Array(token.utf8)) else {
                return APIError(403, "CSRF_TOKEN_REQUIRED", "an action through a console session carries the session's CSRF token in X-CSRF-Token").response
            }
        }
        return nil
    }

    private func revoke(user: String, deviceId: String, body: Data, actor: ConsoleActions.Actor) async throws -> HTTPResponse {
        let fields = (try? JSONSerialization.jsonObject(with: body.isEmpty ? Data("{}".utf8) : body)) as? [String: Any]
        guard let reason = fields?["reason"] as? String else {
            return APIError(400, "INVALID_REQUEST", #"send {"reason": "…"} (1–200 characters)"#).response
        }
        guard let view = try await data.user(user), let device = view.devices.first(where: { $0.deviceId == deviceId }) else {
            return APIError(404, "DEVICE_NOT_FOUND", "the user has no subscribed device with this id").response
        }
        switch try await actions.revoke(deviceId: device.id, user: user, reason: reason, by: actor) {
        case .noReason: return APIError(400, "INVALID_REQUEST", "the reason must be 1–200 characters without control characters").response
        case .gone: return APIError(404, "DEVICE_NOT_FOUND", "the device is already gone").response
        case .revoked(let owner, let revoked): return JSONResponse.make(200, ["user": owner, "deviceId": revoked.deviceId, "state": "REVOKED"])
        }
    }

    private func auditPage(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = FormFields.query(request.query)
        var since: Date?
        if let text = query["since"] {
            guard text.utf8.count <= 40, let parsed = ConsoleJSON.parseTimestamp(text) else {
                return APIError(400, "INVALID_REQUEST", "since is an ISO 8601 instant, e.g. 2026-12-01T00:00:00Z").response
            }
            since = parsed
        }
        let page = ConsolePaging.pageNumber(query["page"])
        let entries = try await audit.entries(since: since, offset: ConsolePaging.offset(of: page), limit: ConsolePaging.pageSize)
        return JSONResponse.make(200, ConsoleJSON.audit(entries, page: page))
    }

    /// The decoded segments of a JSON API path after `/console/api/v1/`: each percent-decoded
    /// once (so an id may hold `/` as `%2F`, `+` as itself or `%2B`), 1–256 bytes without control
    /// characters; nil for anything else.
    package static func apiSegments(_ path: String) -> [String]? {
        guard path.hasPrefix("/console/api/v1/") else { return nil }
        let raw = path.dropFirst("/console/api/v1/".count).split(separator: "/", omittingEmptySubsequences: false)
        guard (1...5).contains(raw.count) else { return nil }
        var segments: [String] = []
        for part in raw {
            guard let segment = String(part).removingPercentEncoding, !segment.isEmpty, segment.utf8.count <= maximumSegmentBytes,
                  !ControlCharacters.present(in: segment) else { return nil }
            segments.append(segment)
        }
        return segments
    }
}
