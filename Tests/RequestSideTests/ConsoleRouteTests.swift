import Foundation
import PigeonDomain
import PigeonCore
@testable import PigeonServer
@testable import PigeonConsole
@testable import PigeonStore
import PigeonTestSupport
import Testing

/// The operator console (CONTRACT §5) through the router on an in-memory source: sign-in and its
/// limit, the session cookie, CSRF on every action, masking, revoking a device, re-queueing a
/// dead report, the JSON twins and their credentials, a database that does not answer.
@Suite("The console through the router", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConsoleRouteTests {
    /// An operator's browser: the session cookie it was given and the CSRF token of the last page.
    struct Browser {
        let harness: RouterHarness
        var cookie: String?
        var peer = "192.0.2.50"

        mutating func signIn(_ username: String = RouterHarness.consoleUser, password: String = RouterHarness.consolePassword) async -> RouterHarness.Answer {
            let answer = await harness.call("POST", "/console/login", body: Self.form(["username": username, "password": password]),
                                            headers: ["content-type": "application/x-www-form-urlencoded"], peer: peer)
            if let setCookie = answer.header("set-cookie"), let value = setCookie.split(separator: ";").first {
                cookie = String(value)
            }
            return answer
        }

        func get(_ path: String) async -> RouterHarness.Answer {
            await harness.call("GET", path, headers: cookie.map { ["cookie": $0] } ?? [:], peer: peer)
        }

        func post(_ path: String, _ fields: [String: String]) async -> RouterHarness.Answer {
            var headers = ["content-type": "application/x-www-form-urlencoded"]
            if let cookie { headers["cookie"] = cookie }
            return await harness.call("POST", path, body: Self.form(fields), headers: headers, peer: peer)
        }

        /// The CSRF token the page at `path` carries in its forms.
        func csrf(from path: String = "/console") async -> String? {
            let page = await get(path).text
            guard let start = page.range(of: #"name="csrf" value=""#) else { return nil }
            return String(page[start.upperBound...].prefix { $0 != "\"" })
        }

        static func form(_ fields: [String: String]) -> String {
            fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
                .joined(separator: "&")
        }
    }

    static func harness() throws -> RouterHarness { try RouterHarness(surfaces: [.devices, .bank], console: true) }

    static func basic(_ user: String, _ password: String) -> [String: String] {
        ["authorization": "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()]
    }

    @Test("a stranger is sent to sign in; a wrong password is 401; the right one sets a Secure, HttpOnly, SameSite=Strict cookie for /console; every answer carries the security headers")
    func signIn() async throws {
        let harness = try Self.harness()
        var browser = Browser(harness: harness)
        let anonymous = await browser.get("/console")
        #expect(anonymous.status == 303 && anonymous.header("location") == "/console/login")
        #expect(await browser.post("/console/device/revoke", ["device": "1"]).status == 403, "an action without a session is refused")
        #expect(await browser.signIn(password: "wrong-password").status == 401)
        #expect(browser.cookie == nil)
        let signedIn = await browser.signIn()
        #expect(signedIn.status == 303 && signedIn.header("location") == "/console")
        let setCookie = try #require(signedIn.header("set-cookie"))
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict") && setCookie.contains("Secure") && setCookie.contains("Path=/console"))
        let overview = await browser.get("/console")
        #expect(overview.status == 200 && overview.text.contains("schema current"), "\(overview.text)")
        for answer in [anonymous, signedIn, overview] {
            let policy = try #require(answer.header("content-security-policy"))
            #expect(policy.contains("default-src 'none'") && !policy.contains("unsafe"))
            #expect(answer.header("cache-control") == "no-store" && answer.header("x-frame-options") == "DENY")
        }
        #expect(!overview.text.contains("<script"))
        #expect(harness.log.records.contains { $0.message == "console: signed in" && $0.metadata["operator"] == RouterHarness.consoleUser })
        #expect(!harness.log.records.contains { $0.metadata.values.contains { $0.contains(RouterHarness.consolePassword) } },
                "no password in the log")
    }

    @Test("ten sign-ins a minute from an address; the eleventh is 429 with Retry-After, even with the right password; another address is not held; a minute later it is free")
    func signInLimit() async throws {
        let harness = try Self.harness()
        var guesser = Browser(harness: harness, peer: "198.51.100.7")
        for _ in 0..<10 { #expect(await guesser.signIn(password: "guess").status == 401) }
        let limited = await guesser.signIn()
        #expect(limited.status == 429 && limited.header("retry-after") != nil && guesser.cookie == nil)
        var other = Browser(harness: harness, peer: "198.51.100.8")
        #expect(await other.signIn().status == 303)
        harness.clock.advance(seconds: 61)
        #expect(await guesser.signIn().status == 303)
    }

    @Test("successful sign-ins are not counted, and the JSON API's wrong credentials have a budget of their own")
    func signInLimitCountsFailuresOnly() async throws {
        let harness = try Self.harness()
        var operatorBrowser = Browser(harness: harness, peer: "198.51.100.9")
        for _ in 0..<15 { #expect(await operatorBrowser.signIn().status == 303) }
        let wrongBasic = ["authorization": "Basic " + Data("\(RouterHarness.consoleUser):wrong".utf8).base64EncodedString()]
        for _ in 0..<12 { _ = await harness.call("GET", "/console/api/v1/notifications/x", headers: wrongBasic, peer: "198.51.100.9") }
        #expect(await harness.call("GET", "/console/api/v1/notifications/x", headers: wrongBasic, peer: "198.51.100.9").status == 429)
        var again = Browser(harness: harness, peer: "198.51.100.9")
        #expect(await again.signIn().status == 303, "the form's budget is not the API's")
    }

    @Test("every action needs the session's CSRF token: none or a wrong one is 403 and changes nothing; signing out ends the session")
    func csrf() async throws {
        let harness = try Self.harness()
        _ = try await harness.register(user: "alice")
        let device = try #require(harness.stores.devices.first)
        var browser = Browser(harness: harness)
        _ = await browser.signIn()
        let token = try #require(await browser.csrf())
        #expect(await browser.post("/console/device/revoke", ["device": String(device.id), "reason": "stolen"]).status == 403)
        #expect(await browser.post("/console/device/revoke", ["device": String(device.id), "reason": "stolen", "csrf": "x" + token]).status == 403)
        #expect(harness.stores.devices.count == 1, "nothing revoked")
        #expect(harness.log.records.contains { $0.message.contains("CSRF") })
        var other = Browser(harness: harness, peer: "192.0.2.51")
        _ = await other.signIn()
        #expect(await other.post("/console/device/revoke", ["device": String(device.id), "reason": "stolen", "csrf": token]).status == 403,
                "another session's token is refused")
        #expect(await browser.post("/console/logout", ["csrf": token]).status == 303)
        #expect(await browser.get("/console").status == 303, "signed out")
        #expect(harness.stores.devices.count == 1)
    }

    @Test("revoking a device needs a reason of at most 200 characters; once revoked its bearer token is refused, the user page lists it removed with the reason, a second revoke says it is gone")
    func revoke() async throws {
        let harness = try Self.harness()
        let bearer = try await harness.register(user: "alice")
        #expect(await harness.call("GET", "/api/v1/notifications/any/details", bearer: bearer).status != 401)
        let device = try #require(harness.stores.devices.first)
        var browser = Browser(harness: harness)
        _ = await browser.signIn()
        let user = await browser.get("/console/user?user=alice")
        #expect(user.status == 200 && user.text.contains("phone-1") && !user.text.contains(device.pushToken), "the push token is shortened")
        let token = try #require(await browser.csrf(from: "/console/user?user=alice"))
        for reason in ["", "   ", String(repeating: "r", count: 201)] {
            let refused = await browser.post("/console/device/revoke", ["device": String(device.id), "reason": reason, "user": "alice", "csrf": token])
            #expect(refused.status == 303 && (refused.header("location") ?? "").contains("Give%20a%20reason"), "\(refused.header("location") ?? "")")
        }
        #expect(harness.stores.devices.count == 1)
        #expect(await browser.post("/console/device/revoke", ["user": "alice", "reason": "stolen", "csrf": token]).status == 400, "no device")
        let revoked = await browser.post("/console/device/revoke", ["device": String(device.id), "reason": "phone stolen", "user": "alice", "csrf": token])
        #expect(revoked.status == 303 && (revoked.header("location") ?? "").contains("revoked"))
        #expect(harness.stores.devices.isEmpty)
        #expect(await harness.call("GET", "/api/v1/notifications/any/details", bearer: bearer).status == 401)
        let after = await browser.get("/console/user?user=alice")
        #expect(after.text.contains("Removed devices (1)") && after.text.contains("revoked in the console by operator: phone stolen"), "\(after.text)")
        let record = try #require(harness.log.records.first { $0.message == "console: device revoked" })
        #expect(record.metadata["reason"] == "phone stolen" && record.metadata["pushToken"] != device.pushToken)
        let again = await browser.post("/console/device/revoke", ["device": String(device.id), "reason": "again", "user": "alice", "csrf": token])
        #expect((again.header("location") ?? "").contains("already%20gone"), "\(again.header("location") ?? "")")
    }

    @Test("a PIN code's text and its PIN details are masked until revealed, and the reveal is logged with the operator")
    func reveal() async throws {
        let harness = try Self.harness()
        _ = try await harness.register(user: "alice")
        let sent = await harness.soap(RouterHarness.send(id: "pin-1", to: ["alice", "bob"], text: "Payment code 482913"))
        #expect(sent.text.contains("<status>OK</status>"))
        var browser = Browser(harness: harness)
        _ = await browser.signIn()
        let masked = await browser.get("/console/notification?id=pin-1")
        #expect(masked.status == 200 && masked.text.contains("Payment code ••••••") && !masked.text.contains("482913"), "\(masked.text)")
        #expect(masked.text.contains("alice") && masked.text.contains("INVALID_SUBSCRIPTION"), "bob has no device")
        let token = try #require(await browser.csrf(from: "/console/notification?id=pin-1"))
        #expect(!harness.log.records.contains { $0.message.contains("revealed") })
        let revealed = await browser.post("/console/notification/reveal", ["id": "pin-1", "csrf": token])
        #expect(revealed.status == 200 && revealed.text.contains("Payment code 482913"))
        #expect(harness.log.records.contains { $0.message.contains("revealed") && $0.metadata["operator"] == RouterHarness.consoleUser
            && $0.metadata["notification"] == "pin-1" })
        let missing = await browser.get("/console/notification?id=nope")
        #expect(missing.status == 200 && !missing.text.contains("Payment code"))
    }

    @Test("a dead report is re-queued once with the CSRF token; again it is no longer a dead letter; a missing id is 400")
    func requeue() async throws {
        let harness = try Self.harness()
        let console = try #require(harness.console)
        console.addDead(DeadReport(id: 9001, kind: "expired", notificationId: "n-1", users: ["alice"], attempts: 8,
                                   lastError: "HTTP 503", createdAt: harness.clock.now, diedAt: harness.clock.now))
        var browser = Browser(harness: harness)
        _ = await browser.signIn()
        let outbox = await browser.get("/console/outbox")
        #expect(outbox.text.contains("9001") && outbox.text.contains("HTTP 503"), "\(outbox.text)")
        let token = try #require(await browser.csrf(from: "/console/outbox"))
        #expect(await browser.post("/console/outbox/requeue", ["id": "9001"]).status == 403)
        let moved = await browser.post("/console/outbox/requeue", ["id": "9001", "csrf": token])
        #expect(moved.status == 303 && (moved.header("location") ?? "").contains("waiting"))
        #expect(console.waiting.map(\.id) == [9001])
        let again = await browser.post("/console/outbox/requeue", ["id": "9001", "csrf": token])
        #expect((again.header("location") ?? "").contains("no%20longer"), "\(again.header("location") ?? "")")
        #expect(console.waiting.count == 1, "re-queued once")
        #expect(await browser.post("/console/outbox/requeue", ["id": "x", "csrf": token]).status == 400)
    }

    @Test("the JSON twins: 401 with a Basic challenge without credentials, 200 with the console's Basic credentials or a session, read-only, 404 for unknown calls, names and ids; ten wrong credentials and the address waits")
    func api() async throws {
        let harness = try Self.harness()
        _ = try await harness.register(user: "alice")
        _ = await harness.soap(RouterHarness.send(id: "n-1", to: ["alice"], text: "Hello"))
        let anonymous = await harness.call("GET", "/console/api/v1/users/alice")
        #expect(anonymous.status == 401 && anonymous.header("www-authenticate")?.contains("Basic") == true)
        let credentials = Self.basic(RouterHarness.consoleUser, RouterHarness.consolePassword)
        let user = await harness.call("GET", "/console/api/v1/users/alice", headers: credentials)
        #expect(user.status == 200 && user.header("content-type")?.contains("json") == true && user.text.contains("phone-1"), "\(user.text)")
        let notification = await harness.call("GET", "/console/api/v1/notifications/n-1", headers: credentials)
        #expect(notification.status == 200 && notification.text.contains("alice"), "\(notification.text)")
        // The shape CONTRACT §5 gives the twins.
        let twin = try #require(try JSONSerialization.jsonObject(with: notification.body) as? [String: Any])
        #expect(Set(["id", "type", "sentAt", "timeout", "confidential", "recipients"]).isSubset(of: twin.keys), "\(twin.keys)")
        let recipient = try #require((twin["recipients"] as? [[String: Any]])?.first)
        #expect(Set(["user", "state", "devices"]).isSubset(of: recipient.keys) && recipient["user"] as? String == "alice")
        let userTwin = try #require(try JSONSerialization.jsonObject(with: user.body) as? [String: Any])
        let device = try #require((userTwin["devices"] as? [[String: Any]])?.first)
        #expect(device["lastReachedAt"] is NSNull && (device["pushToken"] as? String)?.count ?? 0 < 64, "\(device)")
        #expect(await harness.call("GET", "/console/api/v1/notifications/missing", headers: credentials).json["error"] == "NOTIFICATION_NOT_FOUND")
        #expect(await harness.call("POST", "/console/api/v1/users/alice", body: "{}", headers: credentials).status == 405)
        for path in ["/console/api/v1/devices/alice", "/console/api/v1/users/", "/console/api/v1/users/a/b", "/console/api/v2/users/alice",
                     "/console/api/v1/users/" + String(repeating: "u", count: 257), "/console/api/v1/users/a%0Ab"] {
            #expect(await harness.call("GET", path, headers: credentials).status == 404, "\(path)")
        }
        var browser = Browser(harness: harness)
        _ = await browser.signIn()
        #expect(await browser.get("/console/api/v1/users/alice").status == 200, "a session is enough")
        let wrong = Self.basic(RouterHarness.consoleUser, "wrong")
        for _ in 0..<10 { #expect(await harness.call("GET", "/console/api/v1/users/alice", headers: wrong, peer: "203.0.113.9").status == 401) }
        let limited = await harness.call("GET", "/console/api/v1/users/alice", headers: credentials, peer: "203.0.113.9")
        #expect(limited.status == 429 && limited.json["error"] == "TOO_MANY_ATTEMPTS")
    }

    @Test("hostile input: markup in a user id is escaped, a page number of any size is a page, a form over 8 KiB is 413, the console is not on the phones' listener")
    func hostileInput() async throws {
        let harness = try Self.harness()
        var browser = Browser(harness: harness)
        _ = await browser.signIn()
        let user = await browser.get("/console/user?user=%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        #expect(user.status == 200 && !user.text.contains("<script>") && user.text.contains("&lt;script&gt;"), "\(user.text)")
        for page in ["99999999999999999999999", "-5", "0", "x", String(repeating: "9", count: 30)] {
            #expect(await browser.get("/console/outbox?page=\(page)").status == 200, "page=\(page)")
        }
        let token = try #require(await browser.csrf())
        let big = await browser.post("/console/notification/reveal", ["id": String(repeating: "a", count: 9_000), "csrf": token])
        #expect(big.status == 413)
        let phones = try RouterHarness(surfaces: [.devices], console: true)
        #expect(await phones.call("GET", "/console/login").status == 404)
        #expect(await phones.call("GET", "/console/api/v1/users/alice", headers: Self.basic(RouterHarness.consoleUser, RouterHarness.consolePassword)).status == 404)
    }

    @Test("a database that does not answer: every page is 503 saying so and the API answers UNAVAILABLE, nothing of the error's text shown; once it answers, the pages are back")
    func databaseDown() async throws {
        let harness = try Self.harness()
        let console = try #require(harness.console)
        var browser = Browser(harness: harness)
        _ = await browser.signIn()
        console.setFailing(true)
        for path in ["/console", "/console/user?user=alice", "/console/outbox", "/console/notification?id=n-1"] {
            let answer = await browser.get(path)
            #expect(answer.status == 503 && answer.text.contains("did not answer") && !answer.text.contains("Unavailable()"), "\(path): \(answer.text)")
        }
        #expect(await browser.get("/console/config").status == 200, "the configuration needs no database")
        let api = await harness.call("GET", "/console/api/v1/users/alice", headers: Self.basic(RouterHarness.consoleUser, RouterHarness.consolePassword))
        #expect(api.status == 503 && api.json["error"] == "UNAVAILABLE")
        #expect(harness.log.records.contains { $0.level == .error && $0.message == "console page failed" })
        console.setFailing(false)
        #expect(await browser.get("/console").status == 200)
    }

    @Test("the configuration page lists every setting with the secrets redacted")
    func configuration() async throws {
        let harness = try RouterHarness(surfaces: [.devices, .bank], console: true) { configuration in
            configuration.database.password = "database-secret-in-config"
        }
        var browser = Browser(harness: harness)
        _ = await browser.signIn()
        let page = await browser.get("/console/config")
        #expect(page.status == 200 && page.text.contains("consolePassword") && page.text.contains("retentionDays"), "\(page.text)")
        #expect(!page.text.contains("database-secret-in-config") && !page.text.contains(RouterHarness.consolePassword))
    }
}
