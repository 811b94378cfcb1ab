import Foundation
import PigeonDomain
import PigeonCore
@testable import PigeonConsole
import PigeonCrypto
@testable import PigeonServer
@testable import PigeonStore
import PigeonTestSupport
import Testing

/// Operators as persons (CONTRACT §10) through the router: each role's rights on every page, form
/// and JSON call, the JSON actions and their guards, and the audit trail of who did what.
@Suite("Console roles, JSON actions and the audit trail", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConsoleRoleTests {
    typealias Browser = ConsoleRouteTests.Browser

    /// The users file's operators (RouterHarness.operatorsFile): name and password by role.
    static let operators: [ConsoleRole: (name: String, password: String)] = [
        .viewer: ("vera", "viewer-password-2026"), .support: ("sam", "support-password-2026"), .admin: ("ada", "admin-password-2026"),
    ]

    static func basic(_ role: ConsoleRole) -> [String: String] {
        let account = operators[role]!
        return ["authorization": "Basic " + Data("\(account.name):\(account.password)".utf8).base64EncodedString(), "content-type": "application/json"]
    }

    static func signedIn(_ harness: RouterHarness, _ role: ConsoleRole) async throws -> Browser {
        var browser = Browser(harness: harness)
        let answer = await browser.signIn(operators[role]!.name, password: operators[role]!.password)
        #expect(answer.status == 303, "\(role) signs in")
        return browser
    }

    @Test("pages: every role reads the overview, notification, user, outbox and audit pages; only support and admin see and use Reveal and Re-queue; only admin sees and uses Revoke and the configuration; a refused form is a 403 page naming the role it needs and changes nothing")
    func pagesByRole() async throws {
        let harness = try ConsoleRouteTests.harness()
        let console = try #require(harness.console)
        _ = try await harness.register(user: "alice")
        _ = await harness.soap(RouterHarness.send(id: "pin-1", to: ["alice"], text: "Payment code 482913"))
        let device = try #require(harness.stores.devices.first)
        for (index, role) in ConsoleRole.allCases.enumerated() {
            let report = Int64(100 + index)
            console.addDead(DeadReport(id: report, kind: "expired", notificationId: "pin-1", users: ["alice"], attempts: 8, lastError: "HTTP 503",
                                       createdAt: harness.clock.now, diedAt: harness.clock.now))
            let browser = try await Self.signedIn(harness, role)
            for page in ["/console", "/console/notification?id=pin-1", "/console/user?user=alice", "/console/outbox", "/console/audit"] {
                #expect(await browser.get(page).status == 200, "\(role) reads \(page)")
            }
            let token = try #require(await browser.csrf(from: "/console/user?user=alice"))
            let notification = await browser.get("/console/notification?id=pin-1").text
            #expect(notification.contains("Reveal the content") == role.allows(.reveal), "\(role): the reveal button")
            #expect(await browser.get("/console/user?user=alice").text.contains("Revoke</button>") == role.allows(.revoke), "\(role): the revoke form")
            #expect(await browser.get("/console/outbox").text.contains("Re-queue</button>") == role.allows(.requeue), "\(role): the re-queue form")
            #expect(await browser.get("/console").text.contains("/console/config") == role.allows(.configuration), "\(role): the configuration link")
            #expect(await browser.get("/console/config").status == (role == .admin ? 200 : 403), "\(role): the configuration page")
            let reveal = await browser.post("/console/notification/reveal", ["id": "pin-1", "csrf": token])
            #expect(reveal.status == (role == .viewer ? 403 : 200) && reveal.text.contains("482913") == (role != .viewer), "\(role) reveals")
            if role == .viewer { #expect(reveal.text.contains("needs support")) }
            if role != .admin {
                let revoke = await browser.post("/console/device/revoke", ["device": String(device.id), "reason": "lost", "user": "alice", "csrf": token])
                #expect(revoke.status == 403 && harness.stores.devices.count == 1, "\(role) cannot revoke")
            }
            let requeue = await browser.post("/console/outbox/requeue", ["id": String(report), "csrf": token])
            #expect(requeue.status == (role == .viewer ? 403 : 303), "\(role) re-queues")
        }
        #expect(console.waiting.map(\.id).sorted() == [101, 102], "re-queued by support and admin, not by the viewer")
        #expect(harness.audit.all.contains { $0.operatorName == "vera" && $0.action == .reveal && $0.target == "pin-1" && $0.outcome == "refused: needs support" },
                "a refused action is in the trail")
        #expect(harness.audit.all.contains { $0.operatorName == "sam" && $0.action == .revoke && $0.outcome == "refused: needs admin" })
        let admin = try await Self.signedIn(harness, .admin)
        let token = try #require(await admin.csrf(from: "/console/user?user=alice"))
        let revoked = await admin.post("/console/device/revoke", ["device": String(device.id), "reason": "lost", "user": "alice", "csrf": token])
        #expect(revoked.status == 303 && harness.stores.devices.isEmpty, "admin revokes")
    }

    @Test("JSON actions: reveal and test push for support and admin (410 CONTENT_GONE for a confidential one), revoke for admin, FORBIDDEN_ROLE for the rest; actions take JSON only, and through a session only with its X-CSRF-Token")
    func jsonActions() async throws {
        let harness = try RouterHarness(surfaces: [.devices, .bank], authorizedUsers: ["+7 916/123%45"], console: true) { $0.confidential.types = [.pinCode] }
        _ = try await harness.register(user: "+7 916/123%45")
        _ = await harness.soap(RouterHarness.send(id: "hello 1", to: ["+7 916/123%45"], text: "Balance 1234567 RUB", type: "UNIVERSAL"))
        _ = await harness.soap(RouterHarness.send(id: "pin+1", to: ["+7 916/123%45"], text: "Payment code 482913"))
        let user = "%2B7%20916%2F123%2545"
        for role in ConsoleRole.allCases {
            #expect(await harness.call("GET", "/console/api/v1/users/\(user)", headers: Self.basic(role)).status == 200, "\(role) reads")
            let reveal = await harness.call("POST", "/console/api/v1/notifications/hello%201/reveal", headers: Self.basic(role))
            if role == .viewer {
                #expect(reveal.status == 403 && reveal.json["error"] == "FORBIDDEN_ROLE", "\(reveal.text)")
            } else {
                #expect(reveal.status == 200 && reveal.json["text"] == "Balance 1234567 RUB", "\(role): \(reveal.text)")
                let gone = await harness.call("POST", "/console/api/v1/notifications/pin%2B1/reveal", headers: Self.basic(role))
                #expect(gone.status == 410 && gone.json["error"] == "CONTENT_GONE" && !gone.text.contains("482913"), "\(gone.text)")
            }
        }
        let testPush = "/console/api/v1/users/\(user)/test-push"
        #expect(await harness.call("POST", testPush, headers: Self.basic(.viewer)).json["error"] == "FORBIDDEN_ROLE")
        let pushed = await harness.call("POST", testPush, headers: Self.basic(.support))
        #expect(pushed.status == 200 && pushed.text.contains(#""deviceId":"phone-1""#) && pushed.text.contains(#""state":"SENT""#), "\(pushed.text)")
        #expect(harness.audit.all.contains { $0.action == .testPush && $0.operatorName == "sam" && $0.target == "+7 916/123%45" && $0.outcome == "SENT 1" })
        let revokePath = "/console/api/v1/users/\(user)/devices/phone-1/revoke"
        for role in [ConsoleRole.viewer, .support] {
            let refused = await harness.call("POST", revokePath, body: #"{"reason": "lost"}"#, headers: Self.basic(role))
            #expect(refused.status == 403 && refused.json["error"] == "FORBIDDEN_ROLE" && harness.stores.devices.count == 1)
        }
        var plain = Self.basic(.admin)
        plain["content-type"] = "text/plain"
        #expect(await harness.call("POST", revokePath, body: #"{"reason": "lost"}"#, headers: plain).status == 415, "a form of another site cannot send JSON")
        #expect(await harness.call("POST", revokePath, body: #"{"reason": ""}"#, headers: Self.basic(.admin)).json["error"] == "INVALID_REQUEST")
        #expect(await harness.call("POST", "/console/api/v1/users/\(user)/devices/nope/revoke", body: #"{"reason": "lost"}"#, headers: Self.basic(.admin)).status == 404)
        #expect(await harness.call("GET", revokePath, headers: Self.basic(.admin)).header("allow") == "POST")
        // Through a session: the CSRF token in X-CSRF-Token, or nothing happens.
        let browser = try await Self.signedIn(harness, .admin)
        let token = try #require(await browser.csrf())
        var session = ["cookie": try #require(browser.cookie), "content-type": "application/json"]
        let noToken = await harness.call("POST", revokePath, body: #"{"reason": "lost"}"#, headers: session)
        #expect(noToken.status == 403 && noToken.json["error"] == "CSRF_TOKEN_REQUIRED" && harness.stores.devices.count == 1)
        session["x-csrf-token"] = token
        let revoked = await harness.call("POST", revokePath, body: #"{"reason": "lost phone"}"#, headers: session)
        #expect(revoked.status == 200 && revoked.json["state"] == "REVOKED" && harness.stores.devices.isEmpty, "\(revoked.text)")
    }

    @Test("a refused sign-in's name is kept shortened in the audit trail: a password typed into the name field is not in it")
    func refusedNameShortened() async throws {
        let harness = try ConsoleRouteTests.harness()
        var stranger = Browser(harness: harness)
        stranger.peer = "203.0.113.8"
        #expect(await stranger.signIn("ada:correct-horse-battery", password: "").status == 401)
        #expect(await stranger.signIn("ada", password: "guess").status == 401)
        let trail = harness.audit.all
        #expect(trail.map(\.operatorName) == ["ada…(25)", "ada"], "\(trail.map(\.operatorName))")
        #expect(!trail.contains { "\($0)".contains("horse") })
    }

    @Test("the audit trail: sign-ins that worked and failed, reveals, revokes and re-queues with who, role, address, target, reason and outcome, newest first, never the revealed content; GET /console/api/v1/audit with since and the Audit page")
    func auditTrail() async throws {
        let harness = try ConsoleRouteTests.harness()
        let console = try #require(harness.console)
        _ = try await harness.register(user: "alice")
        _ = await harness.soap(RouterHarness.send(id: "pay-1", to: ["alice"], text: "Payment code 482913"))
        console.addDead(DeadReport(id: 7, kind: "expired", notificationId: "pay-1", users: ["alice"], attempts: 8, lastError: "HTTP 503",
                                   createdAt: harness.clock.now, diedAt: harness.clock.now))
        var stranger = Browser(harness: harness)
        stranger.peer = "203.0.113.7"
        #expect(await stranger.signIn("ada", password: "guess").status == 401)
        let support = try await Self.signedIn(harness, .support)
        let token = try #require(await support.csrf(from: "/console/notification?id=pay-1"))
        #expect(await support.post("/console/notification/reveal", ["id": "pay-1", "csrf": token]).text.contains("482913"))
        _ = await support.post("/console/outbox/requeue", ["id": "7", "csrf": token])
        let device = try #require(harness.stores.devices.first)
        let admin = try await Self.signedIn(harness, .admin)
        let adminToken = try #require(await admin.csrf(from: "/console/user?user=alice"))
        _ = await admin.post("/console/device/revoke", ["device": String(device.id), "reason": "phone stolen", "user": "alice", "csrf": adminToken])
        let trail = harness.audit.all
        #expect(trail.map(\.action) == [.signInFailed, .signIn, .reveal, .requeue, .signIn, .revoke], "\(trail.map(\.action))")
        #expect(trail[0].operatorName == "ada" && trail[0].role == "" && trail[0].address == "203.0.113.7")
        #expect(trail[2].operatorName == "sam" && trail[2].role == "support" && trail[2].target == "pay-1" && trail[2].outcome == "revealed")
        #expect(trail[5].operatorName == "ada" && trail[5].role == "admin" && trail[5].reason == "phone stolen" && trail[5].target.contains("phone-1"))
        #expect(!trail.contains { "\($0)".contains("482913") }, "nothing revealed is in the trail")
        let api = await harness.call("GET", "/console/api/v1/audit", headers: Self.basic(.viewer))
        let entries = try #require(try JSONSerialization.jsonObject(with: api.body) as? [String: Any])["entries"] as? [[String: Any]]
        #expect(entries?.first?["action"] as? String == "revoke" && entries?.count == 6, "newest first: \(api.text)")
        #expect(Set(entries?.first?.keys.map { $0 } ?? []) == ["at", "operator", "role", "address", "action", "target", "reason", "outcome"])
        let later = ConsoleJSON.timestamp(harness.clock.now.addingTimeInterval(1))
        let none = await harness.call("GET", "/console/api/v1/audit?since=\(later)", headers: Self.basic(.viewer))
        #expect(((try JSONSerialization.jsonObject(with: none.body) as? [String: Any])?["entries"] as? [Any])?.isEmpty == true, "nothing since a second from now: \(none.text)")
        #expect(await harness.call("GET", "/console/api/v1/audit?since=yesterday", headers: Self.basic(.viewer)).json["error"] == "INVALID_REQUEST")
        let page = await support.get("/console/audit")
        #expect(page.status == 200 && page.text.contains("phone stolen") && page.text.contains("sign-in-failed") && !page.text.contains("482913"))
    }

    @Test("ids as the bank wrote them: a user and a notification id with +, spaces, /, % and non-ASCII letters are found by the forms (query percent-encoded once, a typed + staying +) and by the JSON paths (each segment percent-encoded once)",
          arguments: ["Анна+1 /%", "+79161234567", "a b/c%2Fd", "Zoë+%"])
    func idsAsTyped(id: String) async throws {
        let harness = try RouterHarness(surfaces: [.devices, .bank], authorizedUsers: [id], console: true)
        _ = try await harness.register(user: id)
        let escapedXML = id.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        _ = await harness.soap(RouterHarness.send(id: escapedXML, to: [escapedXML], text: "Hello", type: "UNIVERSAL"))
        let segment = id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let user = await harness.call("GET", "/console/api/v1/users/\(segment)", headers: Self.basic(.viewer))
        #expect(user.status == 200 && user.text.contains("phone-1"), "\(id): \(user.text)")
        let notification = await harness.call("GET", "/console/api/v1/notifications/\(segment)", headers: Self.basic(.viewer))
        #expect(notification.status == 200, "\(id): \(notification.text)")
        let browser = try await Self.signedIn(harness, .viewer)
        let page = await browser.get("/console/user?user=\(segment)")
        #expect(page.text.contains("Devices (1)"), "\(id): the form's query")
        let found = await browser.get("/console/notification?id=\(segment)")
        #expect(found.text.contains("Recipients (1)"), "\(id): \(found.text.prefix(300))")
    }

    @Test("users file: bcrypt, yescrypt and SHA-512 crypt hashes verify through libxcrypt; wrong passwords, DES/MD5 hashes, unknown roles, duplicate names and malformed lines are refused with the line number; a reload keeps the old accounts when the new file is bad")
    func usersFile() async throws {
        let hashes = [
            "$2b$05$97UkFRGw4TKiTVDVzmpqMO/I6SUkSa2b.sFfuD8jzqXbSVr/WW/QC",
            "$6$TK9GGeOQSTcnxEa9$6ZCuapyp3XVPu5sDZx4Q3W.NQ.Hd2nFV6plH5Q2u9KWpOuyD97Yw3kHj2NHqKt71RHzAFndHhyZ8DRej1jsb40",
            "$y$j9T$Zm9vYmFyYmF6cXV4$mCfFVdvAdSFZUWueyyR1ZFnKEWnB0j.Zwqo49CU0.b1",
        ]
        for hash in hashes {
            #expect(PasswordHash.verify("correct horse", hash: hash), "\(hash.prefix(4))")
            #expect(!PasswordHash.verify("correct horsf", hash: hash))
            #expect(!PasswordHash.verify("", hash: hash))
        }
        let made = try #require(PasswordHash.make("s3cret operator"))
        #expect(made.hasPrefix("$y$") && PasswordHash.verify("s3cret operator", hash: made) && !PasswordHash.verify("s3cret operato", hash: made))
        #expect(!PasswordHash.verify("x", hash: "$1$abc$def"), "MD5 crypt is not accepted")
        for (text, problem) in [("ana:$1$salt$hash:viewer\n", "line 1"), ("ana:\(hashes[0]):root\n", "role"), ("# x\n\nana:\(hashes[0])\n", "line 3"),
                                ("ana:\(hashes[0]):viewer\nana:\(hashes[1]):admin\n", "second time"), ("a b:\(hashes[0]):viewer\n", "spaces")] {
            #expect(throws: ConsoleUsersFileError.self, "\(problem)") { try ConsoleUsersFile.parse(text) }
            do { _ = try ConsoleUsersFile.parse(text) } catch { #expect(error.description.contains(problem), "\(error)") }
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-users-\(UUID().uuidString).txt").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        FileManager.default.createFile(atPath: path, contents: Data("ana:\(hashes[0]):admin\n".utf8))
        let file = try ConsoleUsersFile(path: path)
        #expect(await file.signIn(username: "ana", password: "correct horse") == .accepted(ConsoleOperator(name: "ana", role: .admin)))
        #expect(await file.signIn(username: "ana", password: "wrong") == .refused)
        #expect(await file.signIn(username: "bob", password: "correct horse") == .refused)
        FileManager.default.createFile(atPath: path, contents: Data("ana:\(hashes[2]):viewer\nbob:\(hashes[1]):support\n".utf8))
        #expect(try file.reload() == 2)
        #expect(await file.signIn(username: "ana", password: "correct horse") == .accepted(ConsoleOperator(name: "ana", role: .viewer)), "the role changed with the file")
        FileManager.default.createFile(atPath: path, contents: Data("broken\n".utf8))
        #expect(throws: ConsoleUsersFileError.self) { try file.reload() }
        #expect(await file.signIn(username: "bob", password: "correct horse") == .accepted(ConsoleOperator(name: "bob", role: .support)), "a bad file keeps the accounts")
    }

    @Test("a source that is down does not stop the others: a file account signs in while the directory is unreachable, and an account only the directory knows is told the directory is down, not that the password is wrong")
    func sourceDown() async throws {
        struct Down: ConsoleAccountSource {
            func signIn(username: String, password: String) async -> ConsoleSignIn { .unavailable("ldap://127.0.0.1:1: connection refused") }
        }
        let accounts = ConsoleAccounts([ConsoleSingleAccount(username: "local", password: "local-password-1"), Down()])
        #expect(await accounts.signIn(username: "local", password: "local-password-1") == .accepted(ConsoleOperator(name: "local", role: .admin)))
        #expect(await accounts.signIn(username: "someone", password: "x") == .unavailable("ldap://127.0.0.1:1: connection refused"))
    }
}
