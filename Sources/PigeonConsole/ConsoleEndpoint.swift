import Foundation
import PigeonCore
import PigeonDomain
import PigeonHTTP
import PigeonStore
import Synchronization

/// The operator console at `/console` on the bank-facing listener (CONTRACT §5): server-rendered
/// pages behind their own sign-in (`consoleUsername`/`consolePassword`), a session cookie
/// (`HttpOnly`, `SameSite=Strict`, `Secure` over HTTPS), a CSRF token in every form, a strict
/// Content-Security-Policy (no script, styles from the console only), and no caching.
package struct ConsoleEndpoint: Sendable {
    package static let prefix = "/console"
    package static let cookie = "pigeon_console"
    /// Console forms are small.
    package static let maximumBodyBytes = 8 * 1024
    package static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]

    package let credentials: BasicAuthentication
    package let sessions: ConsoleSessions
    /// Failed sign-ins on the form, per client address and minute (successful ones are not counted).
    package let signInLimit: AddressRateLimit
    /// Failed Basic credentials on the JSON API, per client address and minute: a budget of its
    /// own, so a script with a wrong password does not lock the operators' form.
    package let apiSignInLimit: AddressRateLimit
    package let secureCookie: Bool
    package let data: any ConsoleSource
    package let logger: Logger

    package init(credentials: BasicAuthentication, sessions: ConsoleSessions, signInLimit: AddressRateLimit,
                 apiSignInLimit: AddressRateLimit = AddressRateLimit(perMinute: 10), secureCookie: Bool, data: any ConsoleSource, logger: Logger) {
        self.credentials = credentials
        self.sessions = sessions
        self.signInLimit = signInLimit
        self.apiSignInLimit = apiSignInLimit
        self.secureCookie = secureCookie
        self.data = data
        self.logger = logger
    }

    package func serves(_ path: String) -> Bool {
        path == Self.prefix || path.hasPrefix(Self.prefix + "/")
    }

    /// The route template (for metrics) and the answer, with the console's security headers.
    package func handle(_ request: HTTPRequest) async -> (String, HTTPResponse) {
        var (route, response) = await route(request)
        response.headers.append(contentsOf: Self.securityHeaders)
        return ("console_" + route, response)
    }

    private func route(_ request: HTTPRequest) async -> (String, HTTPResponse) {
        let path = request.path
        if path == "/console/style.css" {
            return ("style", HTTPResponse(status: 200, headers: [("Content-Type", "text/css; charset=utf-8")], body: Data(ConsolePages.style.utf8)))
        }
        if request.bodyTooLarge { return ("other", .text(413, "console forms are at most \(Self.maximumBodyBytes) bytes\n")) }
        if path == "/console/login" {
            return ("login", request.method == "POST" ? signIn(request) : page(200, ConsolePages.signIn(message: nil)))
        }
        if path.hasPrefix("/console/api/") { return await api(request) }
        guard let (id, session) = currentSession(request) else {
            if request.method == "GET" { return ("redirect", Self.redirect("/console/login")) }
            return ("refused", .text(403, "sign in first\n"))
        }
        let query = FormFields.query(request.query)
        var form: [String: String] = [:]
        if request.method == "POST" {
            // Every action carries the session's token: a page of another site cannot post here.
            guard let fields = FormFields.parse(request.body), let token = fields["csrf"],
                  BasicAuthentication.constantTimeEqual(Array(token.utf8), Array(session.csrfToken.utf8)) else {
                logger.warning("console action refused: missing or wrong CSRF token", metadata: ["operator": session.username, "path": path, "peer": request.peer])
                return ("refused", page(403, ConsolePages.layout(title: "Refused", session: session, body: "<p>This form has expired or did not come from the console. Go back, reload the page and try again.</p>")))
            }
            form = fields
        }
        let context = ConsolePages.Context(session: session, operatorName: session.username)
        do {
            switch (request.method, path) {
            case ("GET", "/console"), ("GET", "/console/"):
                return ("overview", page(200, ConsolePages.overview(try await data.overview(), context)))
            case ("GET", "/console/notification"):
                return ("notification", page(200, try await notification(query["id"] ?? "", page: ConsolePaging.pageNumber(query["page"]), reveal: false, context)))
            case ("POST", "/console/notification/reveal"):
                let id = form["id"] ?? ""
                logger.notice("console: notification content revealed", metadata: ["operator": session.username, "notification": LogText.escaped(id, limit: 100)])
                return ("reveal", page(200, try await notification(id, page: ConsolePaging.pageNumber(form["page"]), reveal: true, context)))
            case ("GET", "/console/user"):
                let user = query["user"] ?? ""
                return ("user", page(200, ConsolePages.user(user, try await data.user(user), message: query["message"], context)))
            case ("POST", "/console/device/revoke"):
                return ("revoke", try await revoke(form, session: session))
            case ("GET", "/console/outbox"):
                return ("outbox", page(200, ConsolePages.outbox(try await data.outbox(page: ConsolePaging.pageNumber(query["page"])), message: query["message"], context)))
            case ("POST", "/console/outbox/requeue"):
                guard let reportId = form["id"].flatMap(Int64.init) else { return ("requeue", page(400, ConsolePages.layout(title: "Bad request", session: session, body: "<p>No report id.</p>"))) }
                let moved = try await data.requeue(report: reportId)
                logger.notice("console: dead report re-queued", metadata: ["operator": session.username, "report": String(reportId), "moved": String(moved)])
                return ("requeue", Self.redirect("/console/outbox?message=" + HTML.query(moved ? "Report \(reportId) is waiting to be sent again." : "Report \(reportId) is no longer a dead letter.")))
            case ("GET", "/console/config"):
                return ("config", page(200, ConsolePages.configuration(data.settings, context)))
            case ("POST", "/console/logout"):
                sessions.end(id: id)
                logger.info("console: signed out", metadata: ["operator": session.username])
                var response = Self.redirect("/console/login")
                response.headers.append(("Set-Cookie", "\(Self.cookie)=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict\(secureCookie ? "; Secure" : "")"))
                return ("logout", response)
            default:
                return ("unknown", page(404, ConsolePages.layout(title: "Not found", session: session, body: "<p>No such page.</p>")))
            }
        } catch {
            logger.error("console page failed", metadata: ["path": path, "error": "\(error)"])
            return ("error", page(503, ConsolePages.layout(title: "Unavailable", session: session, body: "<p>The database did not answer; try again.</p>")))
        }
    }

    private func notification(_ id: String, page: Int, reveal: Bool, _ context: ConsolePages.Context) async throws -> String {
        guard !id.isEmpty else { return ConsolePages.notificationSearch(context) }
        return ConsolePages.notification(id, try await data.notification(id, page: page), page: page, reveal: reveal, context)
    }

    private func revoke(_ form: [String: String], session: ConsoleSessions.Session) async throws -> HTTPResponse {
        let user = form["user"] ?? ""
        let reason = (form["reason"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard let deviceId = form["device"].flatMap(Int64.init) else {
            return page(400, ConsolePages.layout(title: "Bad request", session: session, body: "<p>No device.</p>"))
        }
        guard !reason.isEmpty, reason.count <= 200 else {
            return Self.redirect("/console/user?user=\(HTML.query(user))&message=" + HTML.query("Give a reason (at most 200 characters) to revoke a device."))
        }
        guard let revoked = try await data.revoke(deviceId: deviceId, reason: "revoked in the console by \(session.username): \(reason)") else {
            return Self.redirect("/console/user?user=\(HTML.query(user))&message=" + HTML.query("That device is already gone."))
        }
        logger.notice("console: device revoked", metadata: [
            "operator": session.username, "user": LogText.escaped(revoked.user, limit: 100), "device": LogText.escaped(revoked.device.deviceId, limit: 100),
            "platform": revoked.device.platform, "pushToken": Redaction.token(revoked.device.pushToken), "reason": LogText.escaped(reason, limit: 200)])
        return Self.redirect("/console/user?user=\(HTML.query(revoked.user))&message=" + HTML.query("Device \(revoked.device.deviceId) revoked: its authentication token and push token no longer work."))
    }

    // MARK: JSON

    /// The JSON twins, for a console session or HTTP Basic with the console's credentials (wrong
    /// credentials count against the address like a sign-in). Read-only: GET only, no CSRF.
    private func api(_ request: HTTPRequest) async -> (String, HTTPResponse) {
        var operatorName = currentSession(request)?.1.username
        if operatorName == nil, let header = request.header("authorization") {
            if let retryAfter = apiSignInLimit.exhausted(request.peer) {
                return ("api_refused", APIError(429, "TOO_MANY_ATTEMPTS", "too many wrong credentials from this address; retry in \(retryAfter) s").response)
            }
            if credentials.accepts(header) {
                operatorName = "basic"
            } else {
                _ = apiSignInLimit.take(request.peer)
                logger.warning("console API: credentials refused", metadata: ["peer": request.peer])
            }
        }
        guard operatorName != nil else {
            var response = APIError(401, "UNAUTHORIZED", "sign in to the console or send the console's credentials (HTTP Basic)").response
            response.headers.append(("WWW-Authenticate", #"Basic realm="pigeon console""#))
            return ("api_refused", response)
        }
        guard request.method == "GET" else { return ("api", APIError(405, "METHOD_NOT_ALLOWED", "the console API is read-only: use GET").response) }
        guard let (resource, name) = Self.apiCall(request.path) else {
            return ("api", APIError(404, "NOT_FOUND", "no such console API call").response)
        }
        do {
            switch resource {
            case "notifications":
                let page = ConsolePaging.pageNumber(FormFields.query(request.query)["page"])
                guard let view = try await data.notification(name, page: page) else {
                    return ("api_notification", APIError(404, "NOTIFICATION_NOT_FOUND", "no notification with this id").response)
                }
                return ("api_notification", JSONResponse.make(200, ConsoleJSON.notification(view, page: page)))
            case "users":
                guard let view = try await data.user(name) else { return ("api_user", APIError(404, "NOT_FOUND", "no user").response) }
                return ("api_user", JSONResponse.make(200, ConsoleJSON.user(name, view)))
            default:
                return ("api", APIError(404, "NOT_FOUND", "no such console API call").response)
            }
        } catch {
            logger.error("console API call failed", metadata: ["path": String(request.path.prefix(100)), "error": "\(error)"])
            return ("api", APIError(503, "UNAVAILABLE", "the console cannot read the database right now").response)
        }
    }

    /// The JSON API call a path names: `/console/api/v1/RESOURCE/NAME`, NAME percent-decoded
    /// once (so an id may hold `/` as `%2F`), 1–256 bytes without control characters; nil for
    /// anything else.
    package static func apiCall(_ path: String) -> (resource: String, name: String)? {
        guard path.hasPrefix("/console/api/v1/") else { return nil }
        let parts = path.dropFirst("/console/api/v1/".count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, let name = parts[1].removingPercentEncoding,
              !name.isEmpty, name.utf8.count <= 256, !ControlCharacters.present(in: name) else { return nil }
        return (parts[0], name)
    }

    // MARK: Sign-in

    private func signIn(_ request: HTTPRequest) -> HTTPResponse {
        // Ten failed sign-ins from an address in a minute: then 429 before the password is
        // looked at, so it cannot be guessed at speed. Successful sign-ins are not counted.
        if let retryAfter = signInLimit.exhausted(request.peer) {
            var response = page(429, ConsolePages.signIn(message: "Too many attempts from this address; try again in \(retryAfter) seconds."))
            response.headers.append(("Retry-After", String(retryAfter)))
            return response
        }
        let fields = FormFields.parse(request.body) ?? [:]
        let username = fields["username"] ?? "", password = fields["password"] ?? ""
        guard credentials.accepts(username: username, password: password) else {
            _ = signInLimit.take(request.peer)
            logger.warning("console: sign-in refused", metadata: ["peer": request.peer, "username": LogText.escaped(username, limit: 64)])
            return page(401, ConsolePages.signIn(message: "Wrong username or password."))
        }
        let (id, _) = sessions.start(username: username)
        logger.notice("console: signed in", metadata: ["operator": LogText.escaped(username, limit: 64), "peer": request.peer])
        var response = Self.redirect("/console")
        response.headers.append(("Set-Cookie", "\(Self.cookie)=\(id); Path=/console; HttpOnly; SameSite=Strict\(secureCookie ? "; Secure" : "")"))
        return response
    }

    private func currentSession(_ request: HTTPRequest) -> (String, ConsoleSessions.Session)? {
        guard let header = request.header("cookie"), header.utf8.count < 8_192 else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0] == Self.cookie else { continue }
            let id = String(pair[1])
            if let session = sessions.session(id: id) { return (id, session) }
        }
        return nil
    }

    private func page(_ status: Int, _ html: String) -> HTTPResponse {
        .text(status, html, contentType: "text/html; charset=utf-8")
    }

    private static func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [("Location", location)])
    }
}

extension BasicAuthentication {
    /// A username and password from a form, in constant time like the header.
    package func accepts(username: String, password: String) -> Bool {
        Self.constantTimeEqual(Array("\(username):\(password)".utf8), expected)
    }
}
