import BankProxy
import Foundation
@testable import PigeonConfiguration
import PigeonCore
import PigeonDomain
import PigeonTestSupport
import Testing

/// The device API (CONTRACT §2) through the router on in-memory stores: the unit tier's view of
/// what `DeviceAPITests` checks end to end over sockets and PostgreSQL.
@Suite("Device API through the router", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct DeviceAPIRouteTests {
    @Test("an authorized user subscribes; the bearer token proves the device on its next registration, without the bank")
    func authorizedThenKnown() async throws {
        let harness = try RouterHarness()
        let first = try await harness.register(user: "alice")
        #expect(first.count >= 43)
        #expect(harness.stores.devices.count == 1)
        #expect(harness.stores.devices.first?.tokenDigest != Data(first.utf8), "the token is stored as its digest")
        let calls = harness.bank.calls
        let newToken = String(repeating: "cd", count: 32)
        let second = await harness.call("POST", "/api/v1/devices/register",
                                        body: RouterHarness.registration(user: "alice", token: newToken), bearer: first)
        #expect(second.status == 200)
        #expect(second.json["authenticationToken"] != first)
        #expect(harness.bank.calls == calls, "a device proved by its bearer token must not ask the bank")
        #expect(harness.stores.devices.map(\.pushToken) == [newToken])
        // The old token no longer works; the new one does.
        #expect(await harness.call("POST", "/api/v1/notifications/x/delivered", bearer: first).status == 401)
        #expect(await harness.call("POST", "/api/v1/notifications/x/delivered", bearer: second.json["authenticationToken"]).status == 404)
    }

    @Test("the SMS flow: 202 with a registrationId, a wrong code 403, the right one subscribes once; the attempts run out")
    func smsFlow() async throws {
        let harness = try RouterHarness()
        let pending = await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "carol", device: "pixel", platform: "ANDROID"))
        #expect(pending.status == 202)
        #expect(pending.json["state"] == "VERIFICATION_REQUIRED")
        let registrationId = try #require(pending.json["registrationId"])
        #expect(harness.stores.devices.isEmpty)
        let code = try #require(harness.bank.code(userId: "carol", deviceId: "pixel"))
        let wrong = await harness.call("POST", "/api/v1/devices/verify",
                                       body: RouterHarness.verification(user: "carol", device: "pixel", registrationId: registrationId, code: "000000"))
        #expect(wrong.status == 403)
        #expect(wrong.json["error"] == "VERIFICATION_FAILED")
        let otherId = await harness.call("POST", "/api/v1/devices/verify",
                                         body: RouterHarness.verification(user: "carol", device: "pixel", registrationId: "not-the-id", code: code))
        #expect(otherId.status == 404)
        #expect(otherId.json["error"] == "REGISTRATION_NOT_FOUND")
        let right = await harness.call("POST", "/api/v1/devices/verify",
                                       body: RouterHarness.verification(user: "carol", device: "pixel", registrationId: registrationId, code: code))
        #expect(right.status == 200)
        #expect(right.json["state"] == "SUBSCRIBED")
        #expect(harness.stores.devices.map(\.identity.platform) == [.android])
        let again = await harness.call("POST", "/api/v1/devices/verify",
                                       body: RouterHarness.verification(user: "carol", device: "pixel", registrationId: registrationId, code: code))
        #expect(again.status == 404, "a registration id is single use")

        // Guessing: after verificationAttempts wrong codes the registration is gone.
        let erin = await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "erin", device: "e"))
        let erinsId = try #require(erin.json["registrationId"])
        let erinsCode = try #require(harness.bank.code(userId: "erin", deviceId: "e"))
        for _ in 0..<5 {
            #expect(await harness.call("POST", "/api/v1/devices/verify",
                                       body: RouterHarness.verification(user: "erin", device: "e", registrationId: erinsId, code: "000000")).status == 403)
        }
        let late = await harness.call("POST", "/api/v1/devices/verify",
                                      body: RouterHarness.verification(user: "erin", device: "e", registrationId: erinsId, code: erinsCode))
        #expect(late.status == 404)
        #expect(harness.stores.pendingRegistrations.isEmpty)
    }

    @Test("bad registrations: 400 with a JSON error naming the problem, nothing stored, the bank never asked", arguments: [
        ("{not json", "MALFORMED_JSON"),
        ("[1,2]", "MALFORMED_JSON"),
        (#"{"bankClientId":"bank","deviceId":"d","platform":"IOS","pushToken":"abab"}"#, "MISSING_FIELD"),
        (#"{"bankClientId":"bank","userId":42,"deviceId":"d","platform":"IOS","pushToken":"ab"}"#, "INVALID_FIELD"),
        (RouterHarness.registration(user: String(repeating: "u", count: 300)), "FIELD_TOO_LONG"),
        (RouterHarness.registration(user: "alice", platform: "WINDOWS_PHONE"), "INVALID_PLATFORM"),
        (RouterHarness.registration(user: "alice", token: String(repeating: "zz", count: 32)), "INVALID_PUSH_TOKEN"),
        (RouterHarness.registration(user: "alice", token: "abc"), "INVALID_PUSH_TOKEN"),
        (RouterHarness.registration(user: "alice", platform: "ANDROID", token: String(repeating: "x", count: 100) + "<script>"), "INVALID_PUSH_TOKEN"),
        (RouterHarness.registration(user: #"alice\u0000admin"#), "INVALID_FIELD"),
        (RouterHarness.registration(user: "alice", device: #"d\r\nX-Injected: 1"#), "INVALID_FIELD"),
        (RouterHarness.registration(user: "alice", extra: #","appId":"retail""#), "UNKNOWN_APP"),
    ])
    func badRegistrations(body: String, code: String) async throws {
        let harness = try RouterHarness()
        let answer = await harness.call("POST", "/api/v1/devices/register", body: body)
        #expect(answer.status == 400, "\(answer.text)")
        #expect(answer.json["error"] == code, "\(answer.text)")
        #expect(answer.json["message"]?.isEmpty == false)
        #expect(answer.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(harness.stores.devices.isEmpty)
        #expect(harness.bank.calls == 0)
    }

    @Test("the edge of the device API: 413 for a large body, 405 with the method to use, 404 for unknown calls")
    func edge() async throws {
        let harness = try RouterHarness()
        let huge = await harness.call("POST", "/api/v1/devices/register", body: "{\"x\":\"" + String(repeating: "a", count: 20_000) + "\"}")
        #expect(huge.status == 413)
        #expect(huge.json["error"] == "BODY_TOO_LARGE")
        #expect(await harness.call("GET", "/api/v1/devices/register").status == 405)
        #expect(await harness.call("PUT", "/api/v1/notifications/n/opened").status == 405)
        #expect(await harness.call("POST", "/api/v1/nothing/here").status == 404)
        #expect(await harness.call("POST", "/api/v1/notifications/n/details").status == 405)
    }

    @Test("the bank down or answering garbage: 503/502 with a clear code, nothing registered; an unknown bank client 404")
    func bankFailures() async throws {
        let harness = try RouterHarness()
        let body = RouterHarness.registration(user: "frank")
        for (failure, status, code) in [(BankProxyError(.unavailable, "connection refused"), 503, "BANK_PROXY_UNAVAILABLE"),
                                        (BankProxyError(.invalidAnswer, "not SOAP"), 502, "BANK_PROXY_INVALID_ANSWER")] {
            harness.bank.setFailure(failure)
            let answer = await harness.call("POST", "/api/v1/devices/register", body: body)
            #expect(answer.status == status)
            #expect(answer.json["error"] == code)
            #expect(harness.stores.devices.isEmpty && harness.stores.pendingRegistrations.isEmpty)
        }
        #expect(harness.metrics.render().contains(#"pigeon_device_registrations_total{result="bank_unavailable"} 1"#))
        harness.bank.setFailure(nil)
        let unknown = await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "dave", bank: "other-bank"))
        #expect(unknown.status == 404)
        #expect(unknown.json["error"] == "BANK_CLIENT_NOT_EXISTS")
        #expect(await harness.call("POST", "/api/v1/devices/register", body: body).status == 202)
    }

    @Test("without sbiOutboundWebServiceURL a new device is refused with 503 BANK_PROXY_NOT_CONFIGURED")
    func noBank() async throws {
        let harness = try RouterHarness(bankConfigured: false)
        let answer = await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "alice"))
        #expect(answer.status == 503)
        #expect(answer.json["error"] == "BANK_PROXY_NOT_CONFIGURED")
    }

    @Test("acknowledgements: DELIVERED then READ, idempotent, never backwards; someone else's notification is 404 like an unknown one")
    func acknowledgements() async throws {
        let harness = try RouterHarness(authorizedUsers: ["alice", "bob"])
        let alice = try await harness.register(user: "alice")
        let bob = try await harness.register(user: "bob", device: "b")
        #expect(await harness.soap(RouterHarness.send(id: "n-1", to: ["alice"])).status == 200)
        harness.stores.setState(.sent, notificationId: "n-1", user: "alice")
        let delivered = await harness.call("POST", "/api/v1/notifications/n-1/delivered", bearer: alice)
        #expect(delivered.status == 200)
        #expect(delivered.json["state"] == "DELIVERED")
        let opened = await harness.call("POST", "/api/v1/notifications/n-1/opened", bearer: alice)
        #expect(opened.json["state"] == "READ")
        let late = await harness.call("POST", "/api/v1/notifications/n-1/delivered", bearer: alice)
        #expect(late.json["state"] == "READ", "never backwards")
        #expect(harness.stores.states(of: "n-1")?.first?.state == .read)
        let others = await harness.call("POST", "/api/v1/notifications/n-1/opened", bearer: bob)
        let unknown = await harness.call("POST", "/api/v1/notifications/n-404/opened", bearer: bob)
        #expect(others.status == 404 && unknown.status == 404)
        #expect(others.text == unknown.text, "someone else's notification answers exactly as an unknown one")
        #expect(await harness.call("POST", "/api/v1/notifications/n-1/opened").status == 401)
        #expect(await harness.call("POST", "/api/v1/notifications/n-1/opened", bearer: "forged").status == 401)
    }

    @Test("details: the app reads its notification's content; a bad id in the path is 400")
    func details() async throws {
        let harness = try RouterHarness()
        let alice = try await harness.register(user: "alice")
        _ = await harness.soap(RouterHarness.send(id: "n-2", to: ["alice"], text: "Code 9911"))
        let details = await harness.call("GET", "/api/v1/notifications/n-2/details", bearer: alice)
        #expect(details.status == 200)
        let object = try #require(try JSONSerialization.jsonObject(with: details.body) as? [String: Any])
        #expect(object["id"] as? String == "n-2")
        #expect((object["pushContent"] as? [String: Any])?["text"] as? String == "Code 9911")
        let bad = await harness.call("GET", "/api/v1/notifications/%0a/details", bearer: alice)
        #expect(bad.status == 400)
        #expect(bad.json["error"] == "INVALID_NOTIFICATION_ID")
    }

    @Test("a register flood from one address: 429 with Retry-After after registrationsPerAddressPerMinute; another address goes on")
    func addressFlood() async throws {
        let harness = try RouterHarness { $0.deviceLimits.registrationsPerAddressPerMinute = 3 }
        for index in 0..<3 {
            #expect(await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "u\(index)"), peer: "198.51.100.7").status == 202)
        }
        let limited = await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "u9"), peer: "198.51.100.7")
        #expect(limited.status == 429)
        #expect(limited.json["error"] == "RATE_LIMITED")
        #expect(Int(limited.header("Retry-After") ?? "") ?? 0 > 0)
        #expect(await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "u9"), peer: "198.51.100.8").status == 202)
    }

    @Test("registrations per user: the bank sees at most registrationsPerUserPerHour for one user")
    func userFlood() async throws {
        let harness = try RouterHarness { $0.deviceLimits.registrationsPerUserPerHour = 2 }
        var statuses: [Int] = []
        for index in 0..<5 {
            statuses.append(await harness.call("POST", "/api/v1/devices/register",
                                               body: RouterHarness.registration(user: "mallory", device: "d\(index)"), peer: "192.0.2.\(index + 1)").status)
        }
        #expect(statuses == [202, 202, 429, 429, 429])
        #expect(harness.bank.calls == 4, "two registrations, each a check and an authorization")
    }

    @Test("overrideSubscriptions: a new device replaces the user's older ones")
    func overrideSubscriptions() async throws {
        let harness = try RouterHarness { $0.overrideSubscriptions = true }
        _ = try await harness.register(user: "alice", device: "old")
        _ = try await harness.register(user: "alice", device: "new")
        #expect(harness.stores.devices.map(\.identity.deviceId) == ["new"])
    }

    @Test("apps: a device registers for a configured app and environment, through the SMS flow too; one phone with two apps is two devices")
    func apps() async throws {
        let harness = try RouterHarness { $0.apps["business"] = GatewayConfiguration.PushApp() }
        let business = await harness.call("POST", "/api/v1/devices/register",
                                          body: RouterHarness.registration(user: "alice", extra: #","appId":"business","environment":"sandbox""#))
        #expect(business.status == 200)
        _ = try await harness.register(user: "alice")
        #expect(Set(harness.stores.devices.map { "\($0.identity.appId)/\($0.identity.environment.rawValue)" }) == ["business/sandbox", "/production"])
        let pending = await harness.call("POST", "/api/v1/devices/register",
                                         body: RouterHarness.registration(user: "carol", extra: #","appId":"business","environment":"sandbox""#))
        #expect(pending.status == 202)
        let code = try #require(harness.bank.code(userId: "carol", deviceId: "phone-1"))
        let verified = await harness.call("POST", "/api/v1/devices/verify", body: RouterHarness.verification(
            user: "carol", registrationId: try #require(pending.json["registrationId"]), code: code))
        #expect(verified.status == 200)
        #expect(harness.stores.devices.first { $0.identity.userId == "carol" }.map { "\($0.identity.appId)/\($0.identity.environment.rawValue)" } == "business/sandbox")
    }

    @Test("Web Push: a subscription to an allowed push service registers as its JSON; another host is refused")
    func webPush() async throws {
        let harness = try RouterHarness(authorizedUsers: ["bob"]) {
            $0.defaultApp.webPush.allowedHosts = WebPushHosts(patterns: ["fcm.googleapis.com"])
        }
        let keys = #""keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}"#
        let web = await harness.call("POST", "/api/v1/devices/register", body:
            #"{"bankClientId":"bank","userId":"bob","deviceId":"browser","platform":"WEB","pushToken":{"endpoint":"https://fcm.googleapis.com/fcm/send/abc",\#(keys)}}"#)
        #expect(web.status == 200, "\(web.text)")
        #expect(harness.stores.devices.first?.pushToken.hasPrefix(#"{"endpoint":"https://fcm.googleapis.com/"#) == true)
        let elsewhere = await harness.call("POST", "/api/v1/devices/register", body:
            #"{"bankClientId":"bank","userId":"bob","deviceId":"b2","platform":"WEB","pushToken":{"endpoint":"https://push.attacker.example/x",\#(keys)}}"#)
        #expect(elsewhere.status == 400, "\(elsewhere.text)")
        #expect(harness.stores.devices.count == 1)
    }

    @Test("bad verifications: 400 naming the problem before the bank is asked; a device with nothing waiting is 404")
    func badVerifications() async throws {
        let harness = try RouterHarness(authorizedUsers: [])
        let cases: [(String, Int, String)] = [
            ("{oops", 400, "MALFORMED_JSON"),
            (#"{"bankClientId":"bank","userId":"u","deviceId":"d","verificationCode":"1"}"#, 400, "MISSING_FIELD"),
            (#"{"bankClientId":"bank","userId":"u","deviceId":"d","registrationId":"\#(String(repeating: "r", count: 129))","verificationCode":"1"}"#, 400, "FIELD_TOO_LONG"),
            (RouterHarness.verification(user: "u", device: "d", registrationId: "nothing-waits", code: "123456"), 404, "REGISTRATION_NOT_FOUND"),
        ]
        for (body, status, code) in cases {
            let answer = await harness.call("POST", "/api/v1/devices/verify", body: body)
            #expect(answer.status == status, "\(body.prefix(50)): \(answer.text)")
            #expect(answer.json["error"] == code, "\(body.prefix(50)): \(answer.text)")
        }
        #expect(harness.bank.calls == 0)
    }
}
