import Foundation
@testable import PigeonConsole
import PigeonCore
import PigeonCrypto
@testable import PigeonServer
import PigeonSimulator
import PigeonTestSupport
import Synchronization
import Testing

/// The operator console (issue 11) over HTTP: only on the bank-facing listener, behind its own
/// sign-in, a CSRF token on every action, a strict Content-Security-Policy, and no secret or full
/// push token on any page.
@Suite("Operator console", .serialized, .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConsoleTests {
    static let password = "console-password-0123"

    /// A signed-in operator's requests (curl, cookies by hand).
    struct Operator {
        let base: String
        var cookie: String?
        /// More curl options (`--cacert` for a console served over HTTPS).
        var curlOptions: [String] = []

        func call(_ method: String, _ path: String, form: [String: String]? = nil) async throws -> DeviceFlowHarness.Answer {
            var arguments = ["-s", "-S", "-i", "-X", method, "--max-time", "30"] + curlOptions
            if let cookie { arguments += ["-H", "Cookie: \(ConsoleEndpoint.cookie)=\(cookie)"] }
            var body: Data?
            if let form {
                arguments += ["-H", "Content-Type: application/x-www-form-urlencoded", "--data-binary", "@-"]
                body = Data(form.map { "\($0.key)=\(HTML.query($0.value))" }.joined(separator: "&").utf8)
            }
            arguments.append(base + path)
            return try await DeviceFlowHarness.curlWithHeaders(arguments, input: body)
        }

        /// The CSRF token in a page's forms.
        static func csrf(_ page: String) -> String? {
            WalletPassHarness.firstMatch(#"name="csrf" value="([^"]+)""#, in: page)?.first
        }
    }

    static func harness() async throws -> DeviceFlowHarness {
        try await DeviceFlowHarness { configuration in
            configuration.http.bankAddress = ("127.0.0.1", 0)
            configuration.console.username = "operator"
            configuration.console.password = Self.password
            configuration.bankChannel.username = "pigeon"
            configuration.bankChannel.password = "to-bank-secret-0123"
        }
    }

    @Test("sign-in, the overview, a notification (PIN masked until revealed, the reveal logged), a user and a revoked device (401 after), the outbox's re-queue, the configuration — no secret anywhere",
          .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
    func operatorQuestions() async throws {
        let flow = try await Self.harness()
        let bank = flow.gateway.bankBaseURL
        var pages: [String] = []

        // Not on the phones' listener; on the bank's, a sign-in first.
        #expect(try await Operator(base: flow.gateway.baseURL).call("GET", "/console").status == 404)
        let anonymous = try await Operator(base: bank).call("GET", "/console")
        #expect(anonymous.status == 303 && anonymous.headers["location"] == "/console/login")
        #expect(try await Operator(base: bank).call("POST", "/console/login", form: ["username": "operator", "password": "wrong-password-000"]).status == 401)
        let signedIn = try await Operator(base: bank).call("POST", "/console/login", form: ["username": "operator", "password": Self.password])
        #expect(signedIn.status == 303)
        let setCookie = try #require(signedIn.headers["set-cookie"])
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict") && setCookie.contains("Path=/console"))
        let cookie = try #require(WalletPassHarness.firstMatch("pigeon_console=([^;]+)", in: setCookie)?.first)
        let console = Operator(base: bank, cookie: cookie)

        let overview = try await console.call("GET", "/console")
        #expect(overview.status == 200 && overview.body.contains("Deliveries queued") && overview.body.contains("schema current"), "\(overview.body)")
        let policy = try #require(overview.headers["content-security-policy"])
        #expect(policy.contains("default-src 'none'") && !policy.contains("unsafe") && !overview.body.contains("<script"))
        pages.append(overview.body)

        // "Did alice get the payment code?"
        let aliceToken = try await flow.register(user: "alice")
        let sent = try await flow.gateway.soap("""
            <inb:sendNotification><notification><id>pin-1</id><pushContent><text>Payment code 482913</text><type>PIN_CODE</type>\
            <details><entry><key>target</key><value>482913</value></entry></details></pushContent>\
            <recipients>alice</recipients><recipients>bob</recipients><timeout>600</timeout></notification></inb:sendNotification>
            """)
        #expect(sent.text.contains("<status>OK</status>"))
        #expect(try await flow.waitUntil(seconds: 120) {
            try await console.call("GET", "/console/notification?id=pin-1").body.contains(#"<td class="state">SENT</td>"#)
        })
        let masked = try await console.call("GET", "/console/notification?id=pin-1")
        #expect(masked.body.contains("alice") && masked.body.contains("INVALID_SUBSCRIPTION") && !masked.body.contains("482913"), "\(masked.body)")
        #expect(masked.body.contains("Payment code ••••••"))
        pages.append(masked.body)
        let csrf = try #require(Operator.csrf(masked.body))
        let revealed = try await console.call("POST", "/console/notification/reveal", form: ["csrf": csrf, "id": "pin-1"])
        #expect(revealed.status == 200 && revealed.body.contains("Payment code 482913"))
        #expect(flow.gateway.logs.records.contains { $0.message.contains("revealed") && $0.metadata["operator"] == "operator" })

        // "Which devices does alice have? Revoke the stolen phone."
        let user = try await console.call("GET", "/console/user?user=alice")
        #expect(user.body.contains("phone-1") && user.body.contains(Redaction.token(String(repeating: "ab", count: 32))))
        #expect(user.body.contains("/console/notification?id=pin-1"), "the user's recent notifications list pin-1")
        pages.append(user.body)
        let deviceId = try #require(WalletPassHarness.firstMatch(#"name="device" value="(\d+)""#, in: user.body)?.first)
        let forged = try await console.call("POST", "/console/device/revoke", form: ["device": deviceId, "user": "alice", "reason": "stolen"])
        #expect(forged.status == 403)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice'") == 1)
        let revoked = try await console.call("POST", "/console/device/revoke", form: ["csrf": csrf, "device": deviceId, "user": "alice", "reason": "phone stolen"])
        #expect(revoked.status == 303)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice'") == 0)
        #expect(try await flow.call("GET", "/api/v1/notifications/pin-1/details", bearer: aliceToken).status == 401)
        #expect(flow.gateway.logs.records.contains { $0.message.contains("device revoked") && $0.metadata["reason"] == "phone stolen" })
        let afterRevoke = try await console.call("GET", "/console/user?user=alice")
        #expect(afterRevoke.body.contains("Removed devices (1)") && afterRevoke.body.contains("revoked in the console by operator: phone stolen"), "\(afterRevoke.body)")

        // "What is the bank proxy refusing?" A dead report, sent again.
        _ = try await flow.database.pool.withConnection { connection in
            try connection.query(sql: """
                INSERT INTO outbox_dead (id, kind, payload, attempts, last_error, created_at)
                VALUES (9001, 'pushIsOpened', '{"notificationId": "old-1", "users": ["carol"]}', 40, 'HTTP 503', now() - interval '3 days')
                """)
        }
        let outbox = try await console.call("GET", "/console/outbox")
        #expect(outbox.body.contains("9001") && outbox.body.contains("HTTP 503"))
        pages.append(outbox.body)
        #expect(try await console.call("POST", "/console/outbox/requeue", form: ["id": "9001"]).status == 403)
        #expect(try await console.call("POST", "/console/outbox/requeue", form: ["csrf": csrf, "id": "9001"]).status == 303)
        #expect(try await flow.count("SELECT count(*) FROM outbox_dead WHERE id = 9001") == 0)

        // Page numbers from the URL never trap the process (the gateway kept serving: the next
        // call is answered), however large, negative or malformed.
        for page in ["9223372036854775807", "-9223372036854775808", "99999999999999999999999", "1e9", "0"] {
            let answer = try await console.call("GET", "/console/outbox?page=\(page)")
            #expect(answer.status == 200, "page=\(page)")
            let notification = try await console.call("GET", "/console/notification?id=nothing&page=\(page)")
            #expect(notification.status == 200 || notification.status == 404, "page=\(page): \(notification.status)")
        }
        let configuration = try await console.call("GET", "/console/config")
        #expect(configuration.body.contains("consolePassword") && configuration.body.contains("rustoreServiceToken"))
        pages.append(configuration.body)
        for page in pages {
            for secret in [Self.password, "to-bank-secret-0123", SimulatorCredentials.rustoreServiceToken, SimulatorCredentials.hmsClientSecret,
                           String(repeating: "ab", count: 32)] {
                #expect(!page.contains(secret), "a page shows \(secret)")
            }
        }

        // Signed out, the cookie is worth nothing.
        #expect(try await console.call("POST", "/console/logout", form: ["csrf": csrf]).status == 303)
        #expect(try await console.call("GET", "/console").status == 303)
        await flow.stop()
    }

    @Test("a confidential notification's content is never shown, not even on reveal; a device's key id is",
          .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
    func confidentialContent() async throws {
        let flow = try await Self.harness()
        let bank = flow.gateway.bankBaseURL
        let signedIn = try await Operator(base: bank).call("POST", "/console/login", form: ["username": "operator", "password": Self.password])
        let cookie = try #require(WalletPassHarness.firstMatch("pigeon_console=([^;]+)", in: signedIn.headers["set-cookie"] ?? "")?.first)
        let console = Operator(base: bank, cookie: cookie)
        let point = try PigeonCrypto.P256PrivateKey().publicPoint
        let registered = try await flow.call("POST", "/api/v1/devices/register", body: String(DeviceFlowHarness.registration(user: "alice").dropLast())
            + #","encryptionKey":{"keyId":"alice-key-7","publicKey":"\#(PigeonCrypto.Base64URL.encode(point))"}}"#)
        #expect(registered.status == 200)
        let sent = try await flow.gateway.soap("""
            <inb:sendNotification><notification><confidential>true</confidential><details><entry><key>name</key><value>ACME</value></entry></details>\
            <id>secret-1</id><pushContent><text>Payment code 482913</text><type>PIN_CODE</type>\
            <details><entry><key>target</key><value>482913</value></entry></details></pushContent>\
            <recipients>alice</recipients><timeout>600</timeout></notification></inb:sendNotification>
            """)
        #expect(sent.text.contains("<status>OK</status>"))
        let page = try await console.call("GET", "/console/notification?id=secret-1")
        #expect(page.status == 200 && page.body.contains("Confidential — not shown"), "\(page.body)")
        #expect(!page.body.contains("4829") && !page.body.contains("Payment code") && !page.body.contains("ACME"))
        #expect(!page.body.contains("/console/notification/reveal"), "no reveal button")
        let csrf = try #require(Operator.csrf(try await console.call("GET", "/console/user?user=alice").body))
        let revealed = try await console.call("POST", "/console/notification/reveal", form: ["csrf": csrf, "id": "secret-1"])
        #expect(revealed.status == 200 && !revealed.body.contains("4829") && revealed.body.contains("Confidential — not shown"))
        let user = try await console.call("GET", "/console/user?user=alice")
        #expect(user.body.contains("yes, alice-key-7"), "\(user.body)")
        // Nothing masked, nothing to reveal: no button.
        _ = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "plain-1", recipients: ["alice"]))
        let plain = try await console.call("GET", "/console/notification?id=plain-1")
        #expect(plain.body.contains("Hello") && !plain.body.contains("/console/notification/reveal"), "\(plain.body)")
        await flow.stop()
    }

    @Test("per device, to the acknowledgement: of alice's two phones one says it received the code and the other that it opened it; the JSON API and the Notification page say which, with when",
          .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
    func perDeviceAcknowledgement() async throws {
        let flow = try await Self.harness()
        let first = try await flow.register(user: "alice", device: "phone-1", token: String(repeating: "a1", count: 32))
        let second = try await flow.register(user: "alice", device: "phone-2", token: String(repeating: "b2", count: 32))
        _ = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "ack 1+2", recipients: ["alice"], timeout: "600"))
        let credentials = ["-u", "operator:\(Self.password)"]
        func devices() async throws -> [[String: Any]] {
            let answer = try await DeviceFlowHarness.curlWithHeaders(["-s", "-i"] + credentials + [flow.gateway.bankBaseURL + "/console/api/v1/notifications/ack%201%2B2"], input: nil)
            let json = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
            return ((json?["recipients"] as? [[String: Any]])?.first?["devices"] as? [[String: Any]]) ?? []
        }
        #expect(try await flow.waitUntil(seconds: 120) {
            let now = try await devices()
            return now.count == 2 && now.allSatisfy { $0["state"] as? String == "SENT" }
        })
        #expect(try await devices().allSatisfy { $0["deliveredAt"] is NSNull && $0["openedAt"] is NSNull }, "nothing acknowledged yet")
        #expect(try await flow.call("POST", "/api/v1/notifications/ack%201%2B2/delivered", bearer: first).status == 200)
        #expect(try await flow.call("POST", "/api/v1/notifications/ack%201%2B2/opened", bearer: second).status == 200)
        #expect(try await flow.call("POST", "/api/v1/notifications/ack%201%2B2/delivered", bearer: second).status == 200, "a later delivered changes nothing")
        let byDevice = Dictionary(uniqueKeysWithValues: try await devices().map { ($0["deviceId"] as? String ?? "", $0) })
        #expect(byDevice["phone-1"]?["deliveredAt"] is String && byDevice["phone-1"]?["openedAt"] is NSNull, "\(byDevice)")
        #expect(byDevice["phone-2"]?["deliveredAt"] is String && byDevice["phone-2"]?["openedAt"] is String, "opened implies received: \(byDevice)")
        let signedIn = try await Operator(base: flow.gateway.bankBaseURL).call("POST", "/console/login", form: ["username": "operator", "password": Self.password])
        let cookie = try #require(WalletPassHarness.firstMatch("pigeon_console=([^;]+)", in: signedIn.headers["set-cookie"] ?? "")?.first)
        let page = try await Operator(base: flow.gateway.bankBaseURL, cookie: cookie).call("GET", "/console/notification?id=ack%201%2B2")
        let rows = page.body.components(separatedBy: "<tr class=\"device\">").dropFirst()
        #expect(rows.count == 2 && rows.contains { $0.contains("phone-1") && $0.contains("received") && !$0.contains("opened") }
                && rows.contains { $0.contains("phone-2") && $0.contains("opened") }, "\(page.body)")
        await flow.stop()
    }

    @Test("a test push from support: each of the user's devices answered as its push service answered (SENT, INVALID_TOKEN), the neutral text on the phone, nothing stored as a notification, the trail records it; a viewer may not",
          .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
    func testPush() async throws {
        let usersFile = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-operators-\(UUID().uuidString)").path
        FileManager.default.createFile(atPath: usersFile, contents: Data(ConsoleFleetTests.operators.utf8))
        defer { try? FileManager.default.removeItem(atPath: usersFile) }
        let flow = try await DeviceFlowHarness { configuration in
            configuration.http.bankAddress = ("127.0.0.1", 0)
            configuration.console.usersFile = usersFile
        }
        let good = String(repeating: "a1", count: 32), dead = String(repeating: "d4", count: 32)
        _ = try await flow.register(user: "alice", device: "phone-1", token: good)
        _ = try await flow.register(user: "alice", device: "phone-2", token: dead)
        flow.simulator.simulator.apns.setFaults(FaultRules([dead: .init(.unregistered)]))
        func push(_ who: String, _ password: String) async throws -> DeviceFlowHarness.Answer {
            try await DeviceFlowHarness.curlWithHeaders(["-s", "-i", "-X", "POST", "-u", "\(who):\(password)", "-H", "Content-Type: application/json",
                                                         flow.gateway.bankBaseURL + "/console/api/v1/users/alice/test-push"], input: nil)
        }
        let refused = try await push("vera", "viewer-password-2026")
        #expect(refused.status == 403 && refused.body.contains("FORBIDDEN_ROLE"))
        let answer = try await push("sam", "support-password-2026")
        #expect(answer.status == 200, "\(answer.body)")
        let devices = (try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])?["devices"] as? [[String: Any]] ?? []
        let states = Dictionary(uniqueKeysWithValues: devices.map { ($0["deviceId"] as? String ?? "", $0["state"] as? String ?? "") })
        #expect(states == ["phone-1": "SENT", "phone-2": "INVALID_TOKEN"], "\(answer.body)")
        let delivered = flow.simulator.simulator.apns.deliveries.filter { $0.deviceToken == good }
        #expect(delivered.count == 1 && String(decoding: delivered[0].payload, as: UTF8.self).contains(ConsoleTestPush.text), "the phone shows the neutral text")
        #expect(try await flow.count("SELECT count(*) FROM notifications") == 0, "nothing stored, nothing to report to the bank")
        #expect(try await flow.count("SELECT count(*) FROM console_audit WHERE action = 'test-push' AND operator = 'sam' AND target = 'alice' AND outcome = 'INVALID_TOKEN 1, SENT 1'") == 1)
        await flow.stop()
    }

    @Test("a listener's certificate on the overview: days left, marked under 14, expired")
    func certificateRows() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let rows = ConsolePages.certificateRows([("listen", now.addingTimeInterval(40 * 86_400 + 60)), ("bankListen", now.addingTimeInterval(3 * 86_400 + 60))], now: now)
        #expect(rows.contains("TLS certificate (listen)</th><td class=\"ok\">valid until") && rows.contains("(40 days)"), "\(rows)")
        #expect(rows.contains("TLS certificate (bankListen)</th><td class=\"bad\">valid until") && rows.contains("(3 days)"), "\(rows)")
        #expect(ConsolePages.certificateRows([("listen", now.addingTimeInterval(-60))], now: now).contains("class=\"bad\">expired"))
    }

    @Test("pins and codes are masked; form fields decode; markup is escaped")
    func pieces() {
        #expect(ConsolePages.mask("Code 482913, card *1234, 12 items") == "Code ••••••, card *••••, 12 items")
        #expect(ConsolePages.mask("4242", everything: true) == "••••")
        #expect(FormFields.parse(Data("a=1&b=x+y%26z&a=2".utf8)) == ["a": "1", "b": "x y&z"])
        #expect(HTML.escape("<script>\"&'") == "&lt;script&gt;&quot;&amp;&#39;")
    }
}
