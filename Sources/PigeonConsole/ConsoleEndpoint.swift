import Foundation
import PigeonCore
import PigeonDomain
import PigeonHTTP
import Synchronization

/// The operator console at `/console` on the bank-facing listener (CONTRACT §5, §10): server-
/// rendered pages behind each operator's own sign-in (a users file, the bank's directory, or the
/// single `consoleUsername`), a role that decides what they may do, sessions kept in PostgreSQL
/// (`HttpOnly`, `SameSite=Strict`, `Secure` over HTTPS), a CSRF token in every form, an audit
/// trail of every sign-in and action, a strict Content-Security-Policy (no script, styles from the
/// console only), and no caching.
package struct ConsoleEndpoint: Sendable {
    package static let prefix = "/console"
    /// The request headers the console reads: its session cookie, Basic credentials of the JSON
    /// API, the actions' JSON type and the session's CSRF token.
    package static let requestHeaders: Set<String> = ["cookie", "authorization", "content-type", "x-csrf-token"]
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

    package let accounts: any ConsoleAccountSource
    package let sessions: ConsoleSessions
    package let audit: any AuditTrail
    /// Failed sign-ins on the form, per client address and minute (successful ones are not counted).
    package let signInLimit: AddressRateLimit
    /// Failed Basic credentials on the JSON API, per client address and minute: a budget of its
    /// own, so a script with a wrong password does not lock the operators' form.
    package let apiSignInLimit: AddressRateLimit
    package let secureCookie: Bool
    package let data: any ConsoleSource
    package let logger: Logger

    package init(accounts: any ConsoleAccountSource, sessions: ConsoleSessions, audit: any AuditTrail, signInLimit: AddressRateLimit,
                 apiSignInLimit: AddressRateLimit = AddressRateLimit(perMinute: 10), secureCookie: Bool, data: any ConsoleSource, logger: Logger) {
        self.accounts = accounts
        self.sessions = sessions
        self.audit = audit
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
            return ("login", request.method == "POST" ? await signIn(request) : page(200, ConsolePages.signIn(message: nil)))
        }
        if path.hasPrefix("/console/api/") { return await api(request) }
        let current: (String, ConsoleSessions.Session)?
        do {
            current = try await currentSession(request)
        } catch {
            logger.error("console: sessions cannot be read", metadata: ["error": "\(error)"])
            return ("error", page(503, ConsolePages.layout(title: "Unavailable", session: nil, body: "<p>The database did not answer; try again.</p>")))
        }
        guard let (id, session) = current else {
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
        let actor = ConsoleActions.Actor(person: session.person, address: request.peer)
        do {
            switch (request.method, path) {
            case ("GET", "/console"), ("GET", "/console/"):
                return ("overview", page(200, ConsolePages.overview(try await data.overview(), context)))
            case ("GET", "/console/notification"):
                return ("notification", page(200, try await notification(query["id"] ?? "", page: ConsolePaging.pageNumber(query["page"]), reveal: false, context)))
            case ("POST", "/console/notification/reveal"):
                guard session.person.role.allows(.reveal) else { return ("reveal", await forbidden(session, .reveal, actor: actor, target: form["id"] ?? "")) }
                let id = form["id"] ?? ""
                _ = try await actions.reveal(id, by: actor)
                return ("reveal", page(200, try await notification(id, page: ConsolePaging.pageNumber(form["page"]), reveal: true, context)))
            case ("GET", "/console/user"):
                let user = query["user"] ?? ""
                return ("user", page(200, ConsolePages.user(user, try await data.user(user), message: query["message"], context)))
            case ("POST", "/console/device/revoke"):
                guard session.person.role.allows(.revoke) else { return ("revoke", await forbidden(session, .revoke, actor: actor, target: "\(form["user"] ?? "") device #\(form["device"] ?? "")")) }
                return ("revoke", try await revoke(form, actor: actor, session: session))
            case ("POST", "/console/user/test-push"):
                guard session.person.role.allows(.testPush) else { return ("test_push", await forbidden(session, .testPush, actor: actor, target: form["user"] ?? "")) }
                let user = form["user"] ?? ""
                guard !user.isEmpty, user.utf8.count <= 256 else { return ("test_push", page(400, ConsolePages.layout(title: "Bad request", session: session, body: "<p>No user.</p>"))) }
                let results = try await actions.testPush(user: user, by: actor)
                let said = results.isEmpty ? "No device to push to." : "Test push: " + results.map { "\($0.deviceId) \($0.state)\($0.lastError.map { " (\($0))" } ?? "")" }.joined(separator: "; ")
                return ("test_push", Self.redirect("/console/user?user=\(HTML.query(user))&message=" + HTML.query(said)))
            case ("GET", "/console/outbox"):
                return ("outbox", page(200, ConsolePages.outbox(try await data.outbox(page: ConsolePaging.pageNumber(query["page"])), message: query["message"], context)))
            case ("POST", "/console/outbox/requeue"):
                guard session.person.role.allows(.requeue) else { return ("requeue", await forbidden(session, .requeue, actor: actor, target: "report \(form["id"] ?? "")")) }
                guard let reportId = form["id"].flatMap(Int64.init) else { return ("requeue", page(400, ConsolePages.layout(title: "Bad request", session: session, body: "<p>No report id.</p>"))) }
                let moved = try await actions.requeue(reportId, by: actor)
                return ("requeue", Self.redirect("/console/outbox?message=" + HTML.query(moved ? "Report \(reportId) is waiting to be sent again." : "Report \(reportId) is no longer a dead letter.")))
            case ("GET", "/console/audit"):
                let pageNumber = ConsolePaging.pageNumber(query["page"])
                let entries = try await audit.entries(since: nil, offset: ConsolePaging.offset(of: pageNumber), limit: ConsolePaging.pageSize)
                return ("audit", page(200, ConsolePages.audit(entries, page: pageNumber, context)))
            case ("GET", "/console/config"):
                guard session.person.role.allows(.configuration) else { return ("config", await forbidden(session, .configuration, actor: actor, target: "")) }
                return ("config", page(200, ConsolePages.configuration(data.settings, context)))
            case ("POST", "/console/logout"):
                try await sessions.end(id: id)
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

    /// The actions pages and JSON calls share, each recorded in the audit trail.
    var actions: ConsoleActions { ConsoleActions(accounts: accounts, data: data, audit: audit, logger: logger) }

    private func forbidden(_ session: ConsoleSessions.Session, _ right: ConsoleRole.Right, actor: ConsoleActions.Actor, target: String) async -> HTTPResponse {
        await actions.refused(right, target: target, by: actor)
        return page(403, ConsolePages.layout(title: "Not allowed", session: session, body: "<p>Your role (\(session.person.role.rawValue)) does not allow this; it needs \(ConsoleRole.least(for: right).rawValue).</p>"))
    }

    private func notification(_ id: String, page: Int, reveal: Bool, _ context: ConsolePages.Context) async throws -> String {
        guard !id.isEmpty else { return ConsolePages.notificationSearch(context) }
        return ConsolePages.notification(id, try await data.notification(id, page: page), page: page, reveal: reveal, context)
    }

    private func revoke(_ form: [String: String], actor: ConsoleActions.Actor, session: ConsoleSessions.Session) async throws -> HTTPResponse {
        let user = form["user"] ?? ""
        guard let deviceId = form["device"].flatMap(Int64.init) else {
            return page(400, ConsolePages.layout(title: "Bad request", session: session, body: "<p>No device.</p>"))
        }
        switch try await actions.revoke(deviceId: deviceId, user: user, reason: form["reason"] ?? "", by: actor) {
        case .noReason:
            return Self.redirect("/console/user?user=\(HTML.query(user))&message=" + HTML.query("Give a reason (at most 200 characters) to revoke a device."))
        case .gone:
            return Self.redirect("/console/user?user=\(HTML.query(user))&message=" + HTML.query("That device is already gone."))
        case .revoked(let owner, let device):
            return Self.redirect("/console/user?user=\(HTML.query(owner))&message=" + HTML.query("Device \(device.deviceId) revoked: its authentication token and push token no longer work."))
        }
    }

    // MARK: Sign-in

    private func signIn(_ request: HTTPRequest) async -> HTTPResponse {
        // Ten failed sign-ins from an address in a minute: then 429 before the password is
        // looked at, so it cannot be guessed at speed. Successful sign-ins are not counted.
        if let retryAfter = signInLimit.exhausted(request.peer) {
            var response = page(429, ConsolePages.signIn(message: "Too many attempts from this address; try again in \(retryAfter) seconds."))
            response.headers.append(("Retry-After", String(retryAfter)))
            return response
        }
        let fields = FormFields.parse(request.body) ?? [:]
        let username = fields["username"] ?? "", password = fields["password"] ?? ""
        switch await actions.signIn(username: username, password: password, address: request.peer, channel: "form") {
        case .refused:
            _ = signInLimit.take(request.peer)
            return page(401, ConsolePages.signIn(message: "Wrong username or password."))
        case .unavailable:
            return page(503, ConsolePages.signIn(message: "Your account cannot be checked right now: the directory does not answer. Try again in a minute, or ask for a local account."))
        case .accepted(let person):
            do {
                let (id, _) = try await sessions.start(person)
                var response = Self.redirect("/console")
                response.headers.append(("Set-Cookie", "\(Self.cookie)=\(id); Path=/console; HttpOnly; SameSite=Strict\(secureCookie ? "; Secure" : "")"))
                return response
            } catch {
                logger.error("console: a session could not be stored", metadata: ["operator": LogText.escaped(person.name, limit: 64), "error": "\(error)"])
                return page(503, ConsolePages.signIn(message: "The database did not answer; try again."))
            }
        }
    }

    func currentSession(_ request: HTTPRequest) async throws -> (String, ConsoleSessions.Session)? {
        guard let header = request.header("cookie"), header.utf8.count < 8_192 else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0] == Self.cookie else { continue }
            let id = String(pair[1])
            if let session = try await sessions.session(id: id) { return (id, session) }
        }
        return nil
    }

    func page(_ status: Int, _ html: String) -> HTTPResponse {
        .text(status, html, contentType: "text/html; charset=utf-8")
    }

    static func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [("Location", location)])
    }
}
