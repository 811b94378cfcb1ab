import Foundation
import PigeonBankStub
@testable import PigeonConfiguration
import PigeonCore
import PigeonDomain
@testable import PigeonServer
import PigeonStore
import PigeonTestSupport
import Testing

/// The device API (CONTRACT §2) against `pigeon bank-stub` and `pigeon simulate`.
@Suite("Device API", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct DeviceAPITests {
    @Test("an authorized user subscribes; a known device proved by its bearer token gets its new push token and a new authentication token without the bank")
    func authorizedAndKnown() async throws {
        let flow = try await DeviceFlowHarness()
        let first = try await flow.register(user: "alice")
        #expect(first.count >= 43)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice' AND state = 'SUBSCRIBED'") == 1)
        // The token is stored only as its digest.
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE position('\(first)' in encode(auth_token_hash, 'escape')) > 0") == 0)
        let callsBefore = flow.stub.calls
        let newToken = String(repeating: "cd", count: 32)
        let second = try await flow.register(user: "alice", token: newToken, bearer: first)
        #expect(second != first)
        #expect(flow.stub.calls == callsBefore, "a device proved by its bearer token must not ask the bank again")
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice' AND push_token = '\(newToken)'") == 1)
        #expect(try await flow.call("POST", "/api/v1/notifications/x/delivered", bearer: first).status == 401)
        #expect(try await flow.call("POST", "/api/v1/notifications/x/delivered", bearer: second).status == 404)
        await flow.stop()
    }

    @Test("apps: a device registers for a configured app and environment (through the SMS flow too); one phone with two apps is two devices; an unknown app is refused and nothing stored")
    func appsAtRegistration() async throws {
        let flow = try await DeviceFlowHarness { $0.apps["business"] = GatewayConfiguration.PushApp() }
        func registration(_ user: String, _ extra: String) -> String {
            String(DeviceFlowHarness.registration(user: user).dropLast()) + extra + "}"
        }
        let business = try await flow.call("POST", "/api/v1/devices/register", body: registration("alice", #","appId":"business","environment":"sandbox""#))
        #expect(business.status == 200)
        _ = try await flow.register(user: "alice")
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice' AND app_id = 'business' AND environment = 'sandbox'") == 1)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice' AND app_id = '' AND environment = 'production'") == 1)
        let unknown = try await flow.call("POST", "/api/v1/devices/register", body: registration("bob", #","appId":"retail""#))
        #expect(unknown.status == 400)
        #expect(unknown.json["error"] == "UNKNOWN_APP")
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'bob'") == 0)
        // Through the bank's SMS flow, the waiting registration keeps its app and environment.
        let pending = try await flow.call("POST", "/api/v1/devices/register", body: registration("carol", #","appId":"business","environment":"sandbox""#))
        #expect(pending.status == 202)
        let registrationId = try #require(pending.json["registrationId"])
        let code = try #require(flow.stub.code(bankClientId: "bank", userId: "carol", deviceId: "phone-1"))
        let verified = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(
            user: "carol", device: "phone-1", registrationId: registrationId, code: code))
        #expect(verified.status == 200)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'carol' AND app_id = 'business' AND environment = 'sandbox'") == 1)
        await flow.stop()
    }

    @Test("RuStore, Huawei and Web Push devices register through the bank like the others; the bank is asked with their platform")
    func newPlatformsThroughTheBank() async throws {
        let flow = try await DeviceFlowHarness { $0.defaultApp.webPush.allowedHosts = WebPushHosts(patterns: ["fcm.googleapis.com"]) }
        for (device, platform) in [("ru", "RUSTORE"), ("hw", "HUAWEI")] {
            let answer = try await flow.call("POST", "/api/v1/devices/register",
                                             body: DeviceFlowHarness.registration(user: "alice", device: device, platform: platform, token: "token-\(device)-0123456789abcdef"))
            #expect(answer.status == 200, "\(platform): \(answer.body)")
        }
        let subscription = #"{"endpoint":"https://fcm.googleapis.com/fcm/send/abc","keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}}"#
        let web = try await flow.call("POST", "/api/v1/devices/register",
                                      body: #"{"bankClientId":"bank","userId":"bob","deviceId":"browser","platform":"WEB","pushToken":\#(subscription)}"#)
        #expect(web.status == 200, "\(web.body)")
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice' AND platform IN ('RUSTORE', 'HUAWEI')") == 2)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'bob' AND platform = 'WEB' AND push_token LIKE '{\"endpoint\":\"https://fcm.googleapis.com/%'") == 1)
        await flow.stop()
    }

    @Test("SMS flow: 202 with a registrationId, a wrong code is refused, the right one subscribes; an unknown bank client gets 404")
    func smsVerification() async throws {
        let flow = try await DeviceFlowHarness()
        let registration = DeviceFlowHarness.registration(user: "carol", device: "pixel", platform: "ANDROID")
        let pending = try await flow.call("POST", "/api/v1/devices/register", body: registration)
        #expect(pending.status == 202)
        #expect(pending.json["state"] == "VERIFICATION_REQUIRED")
        let registrationId = try #require(pending.json["registrationId"])
        #expect(registrationId.count >= 43)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'carol' AND state = 'SUBSCRIBED'") == 0)
        // A pending device gets no pushes and does not count as a subscription.
        let exists = try await flow.gateway.soap("<inb:checkSubscriptionExists><user>carol</user></inb:checkSubscriptionExists>")
        #expect(exists.text.contains("<exists>false</exists>"))

        let code = try #require(flow.stub.code(bankClientId: "bank", userId: "carol", deviceId: "pixel"))
        let wrong = code == "000000" ? "111111" : "000000"
        let refused = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "carol", device: "pixel", registrationId: registrationId, code: wrong))
        #expect(refused.status == 403)
        #expect(refused.json["error"] == "VERIFICATION_FAILED")
        let otherId = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "carol", device: "pixel", registrationId: "not-the-id", code: code))
        #expect(otherId.status == 404)
        let verified = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "carol", device: "pixel", registrationId: registrationId, code: code))
        #expect(verified.status == 200)
        #expect(verified.json["state"] == "SUBSCRIBED")
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'carol' AND state = 'SUBSCRIBED' AND platform = 'ANDROID'") == 1)
        // Single use: the registration is gone once verified.
        let again = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "carol", device: "pixel", registrationId: registrationId, code: code))
        #expect(again.status == 404)

        // Guessing is cut short: the attempts are spent, the registration is gone, even the right
        // code no longer works, and a new registration within the window gets no new attempts.
        let erin = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "erin", device: "e"))
        #expect(erin.status == 202)
        let erinsId = try #require(erin.json["registrationId"])
        let erinsCode = try #require(flow.stub.code(bankClientId: "bank", userId: "erin", deviceId: "e"))
        let guess = erinsCode == "000000" ? "111111" : "000000"
        let attempts = GatewayConfiguration.DeviceLimits().verificationAttempts
        for _ in 0..<attempts {
            #expect(try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "erin", device: "e", registrationId: erinsId, code: guess)).status == 403)
        }
        let late = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "erin", device: "e", registrationId: erinsId, code: erinsCode))
        #expect(late.status == 404)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'erin'") == 0)
        let anew = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "erin", device: "e"))
        let anewId = try #require(anew.json["registrationId"])
        let newCode = try #require(flow.stub.code(bankClientId: "bank", userId: "erin", deviceId: "e"))
        let limited = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "erin", device: "e", registrationId: anewId, code: newCode))
        #expect(limited.status == 429)
        #expect(limited.json["error"] == "RATE_LIMITED")

        let unknown = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "dave", bank: "other-bank"))
        #expect(unknown.status == 404)
        #expect(unknown.json["error"] == "BANK_CLIENT_NOT_EXISTS")
        await flow.stop()
    }

    @Test("the bank down, slow or answering garbage during registration: a clear error and no half-registered device")
    func bankFailures() async throws {
        let flow = try await DeviceFlowHarness()
        let body = DeviceFlowHarness.registration(user: "frank")
        for (mode, status, code) in [(BankStub.Mode.down, 503, "BANK_PROXY_UNAVAILABLE"), (.slow(milliseconds: 20_000), 503, "BANK_PROXY_UNAVAILABLE"), (.garbage, 502, "BANK_PROXY_INVALID_ANSWER")] {
            flow.stub.setMode(mode)
            let answer = try await flow.call("POST", "/api/v1/devices/register", body: body)
            #expect(answer.status == status, "\(mode): \(answer.body)")
            #expect(answer.json["error"] == code)
            #expect(try await flow.count("SELECT count(*) FROM devices") == 0)
        }
        // What the PigeonRegistrationsFailing alert watches.
        let metrics = try await flow.gateway.request("GET", "/metrics").text
        #expect(metrics.contains(#"pigeon_device_registrations_total{result="bank_unavailable"} 2"#), "\(metrics.split(separator: "\n").filter { $0.contains("registrations") })")
        #expect(metrics.contains(#"pigeon_device_registrations_total{result="bank_invalid_answer"} 1"#))
        // Back to normal: the same registration goes through (an SMS code this time, as frank
        // is not pre-authorized).
        flow.stub.setMode(.normal)
        #expect(try await flow.call("POST", "/api/v1/devices/register", body: body).status == 202)
        await flow.stop()
    }

    @Test("acknowledgements: DELIVERED then READ with pushIsOpened at the bank, idempotent, never backwards; 401/404; details")
    func acknowledgements() async throws {
        let flow = try await DeviceFlowHarness()
        let alice = try await flow.register(user: "alice")
        let bob = try await flow.register(user: "bob", device: "bobs-phone", platform: "ANDROID")
        let details = #"<details><entry><key>amount</key><value>100.00</value></entry></details>"#
        let reply = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "ack-1", recipients: ["alice", "bob"], extra: details))
        #expect(reply.text.contains("<status>OK</status>"))
        _ = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "ack-2", recipients: ["bob"]))

        let delivered = try await flow.call("POST", "/api/v1/notifications/ack-1/delivered", bearer: alice)
        #expect(delivered.status == 200)
        #expect(delivered.json["state"] == "DELIVERED")
        #expect(try await flow.call("POST", "/api/v1/notifications/ack-1/opened", bearer: alice).json["state"] == "READ")
        // Repeated and late acknowledgements change nothing.
        #expect(try await flow.call("POST", "/api/v1/notifications/ack-1/opened", bearer: alice).json["state"] == "READ")
        #expect(try await flow.call("POST", "/api/v1/notifications/ack-1/delivered", bearer: alice).json["state"] == "READ")
        // Opened before delivered lands READ.
        #expect(try await flow.call("POST", "/api/v1/notifications/ack-1/opened", bearer: bob).json["state"] == "READ")

        // Someone else's notification answers exactly as an unknown one.
        let othersAck = try await flow.call("POST", "/api/v1/notifications/ack-2/delivered", bearer: alice)
        let unknownAck = try await flow.call("POST", "/api/v1/notifications/no-such-id/delivered", bearer: alice)
        #expect(othersAck.status == 404 && unknownAck.status == 404)
        #expect(othersAck.body == unknownAck.body)
        let othersDetails = try await flow.call("GET", "/api/v1/notifications/ack-2/details", bearer: alice)
        let unknownDetails = try await flow.call("GET", "/api/v1/notifications/no-such-id/details", bearer: alice)
        #expect(othersDetails.status == 404 && othersDetails.body == unknownDetails.body)
        #expect(try await flow.call("POST", "/api/v1/notifications/nope/opened", bearer: alice).status == 404)
        #expect(try await flow.call("POST", "/api/v1/notifications/ack-1/opened").status == 401)
        #expect(try await flow.call("POST", "/api/v1/notifications/ack-1/opened", bearer: "forged-token").status == 401)

        let read = try await flow.call("GET", "/api/v1/notifications/ack-1/details", bearer: bob)
        #expect(read.status == 200)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(read.body.utf8)) as? [String: Any])
        #expect(object["id"] as? String == "ack-1")
        #expect((object["details"] as? [String: String])?["amount"] == "100.00")
        #expect((object["pushContent"] as? [String: Any])?["text"] as? String == "Hello")

        let status = try await flow.gateway.soap("<inb:getDeliveryStatus><id>ack-1</id></inb:getDeliveryStatus>")
        #expect(status.text.contains("<key>alice</key><value>READ</value>"))
        #expect(status.text.contains("<key>bob</key><value>READ</value>"))
        // One pushIsOpened per user that opened, however often they acknowledged.
        #expect(try await flow.waitUntil(seconds: 120) { flow.stub.reports.count >= 2 })
        #expect(try await flow.waitUntilReportsSettled())
        let opened = flow.stub.reports.filter { $0.operation == "pushIsOpened" }
        #expect(opened.count == 2)
        #expect(Set(opened.map { $0.users.first ?? "" }) == ["alice", "bob"])
        #expect(opened.allSatisfy { $0.notificationId == "ack-1" })

        // deleteSubscription revokes the tokens; an expired token is refused too.
        _ = try await flow.gateway.soap("<inb:deleteSubscription><user>bob</user></inb:deleteSubscription>")
        #expect(try await flow.call("GET", "/api/v1/notifications/ack-1/details", bearer: bob).status == 401)
        _ = try await flow.database.pool.withConnection { try $0.query(sql: "UPDATE devices SET auth_token_expires_at = now() - interval '1 second' WHERE user_id = 'alice'") }
        #expect(try await flow.call("GET", "/api/v1/notifications/ack-1/details", bearer: alice).status == 401)
        await flow.stop()
    }

    @Test("overrideSubscriptions: a new device unsubscribes the user's older ones")
    func overrideSubscriptions() async throws {
        let flow = try await DeviceFlowHarness { $0.overrideSubscriptions = true }
        let old = try await flow.register(user: "alice", device: "old-phone")
        _ = try await flow.register(user: "alice", device: "new-phone", platform: "ANDROID")
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice'") == 1)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice' AND device_id = 'new-phone'") == 1)
        #expect(try await flow.call("POST", "/api/v1/notifications/x/opened", bearer: old).status == 401)
        await flow.stop()
    }
}
