import Foundation
import PigeonTestSupport
import Testing

/// Taking over a device, guessing codes, racing registrations: what the device API refuses,
/// through the router on in-memory stores (the races on PostgreSQL's locks stay in the
/// integration tier's `RegistrationAttackTests`).
@Suite("Registration attacks through the router", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct RegistrationRouteTests {
    static let userToken = String(repeating: "ab", count: 32)
    static let attackerToken = String(repeating: "ef", count: 32)

    @Test("a known device re-registered without its bearer token, with a forged, expired or another device's one: the bank is asked, the push token stays")
    func takeoverWithoutProof() async throws {
        let harness = try RouterHarness(authorizedUsers: ["carol"])
        let bearer = try await harness.register(user: "carol", device: "pixel")
        let other = try await harness.register(user: "carol", device: "other")
        harness.bank.setAuthorized([])
        let attack = RouterHarness.registration(user: "carol", device: "pixel", token: Self.attackerToken)
        for forged in [nil, "forged-" + String(repeating: "x", count: 40), bearer + "x", other] {
            let calls = harness.bank.calls
            let answer = await harness.call("POST", "/api/v1/devices/register", body: attack, bearer: forged)
            #expect(answer.status == 202, "\(answer.text)")
            #expect(answer.json["authenticationToken"] == nil)
            #expect(harness.bank.calls == calls + 2, "checkSubscriptionAuthorized, then authorizeSubscription")
            #expect(harness.stores.devices.first { $0.identity.deviceId == "pixel" }?.pushToken == Self.userToken)
        }
        #expect(await harness.call("POST", "/api/v1/notifications/x/delivered", bearer: bearer).status == 404, "the real device's token still works")
        harness.clock.advance(seconds: 91 * 24 * 3600)  // past authTokenLifetimeSeconds (90 days)
        #expect(await harness.call("POST", "/api/v1/notifications/x/delivered", bearer: bearer).status == 401, "an expired token proves nothing")
        #expect(await harness.call("POST", "/api/v1/devices/register", body: attack, bearer: bearer).status == 202)
        #expect(harness.stores.devices.first { $0.identity.deviceId == "pixel" }?.pushToken == Self.userToken)
    }

    @Test("a pending registration registered over by someone else: the user's code subscribes the user's push token only")
    func pendingOverwritten() async throws {
        let harness = try RouterHarness(authorizedUsers: [])
        let user = await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "erin", device: "e", token: Self.userToken))
        let userCode = try #require(harness.bank.code(userId: "erin", deviceId: "e"))
        let attacker = await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "erin", device: "e", token: Self.attackerToken))
        let code = try #require(harness.bank.code(userId: "erin", deviceId: "e"))
        let userId = try #require(user.json["registrationId"]), attackerId = try #require(attacker.json["registrationId"])
        #expect(userId != attackerId)
        #expect(userCode != code, "each authorization sends a new code")
        // The user holds the SMS: the newest code, under the user's own registration id.
        let verified = await harness.call("POST", "/api/v1/devices/verify",
                                          body: RouterHarness.verification(user: "erin", device: "e", registrationId: userId, code: code))
        #expect(verified.status == 200)
        #expect(harness.stores.devices.map(\.pushToken) == [Self.userToken])
        let late = await harness.call("POST", "/api/v1/devices/verify",
                                      body: RouterHarness.verification(user: "erin", device: "e", registrationId: attackerId, code: code))
        #expect(late.status == 404, "the attacker's registration died with the verification")
    }

    @Test("50 concurrent wrong codes: at most verificationAttempts reach the bank, nothing subscribed")
    func concurrentGuesses() async throws {
        let harness = try RouterHarness(authorizedUsers: []) { $0.deviceLimits.registrationsPerAddressPerMinute = 0 }
        let pending = await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "frank", device: "f"))
        let registrationId = try #require(pending.json["registrationId"])
        let before = harness.bank.calls
        let statuses = await withTaskGroup(of: Int.self) { group in
            for guess in 0..<50 {
                group.addTask {
                    await harness.call("POST", "/api/v1/devices/verify", body: RouterHarness.verification(
                        user: "frank", device: "f", registrationId: registrationId, code: String(format: "%06d", guess))).status
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(harness.bank.calls - before <= 5)
        #expect(statuses.filter { $0 == 403 }.count <= 5)
        #expect(statuses.allSatisfy { [403, 404, 429].contains($0) }, "\(statuses)")
        #expect(harness.stores.devices.isEmpty)
    }

    @Test("control characters in a notification id of a path: 400, nothing acknowledged")
    func controlCharactersInPath() async throws {
        let harness = try RouterHarness()
        let bearer = try await harness.register(user: "alice")
        let answer = await harness.call("POST", "/api/v1/notifications/a%0D%0Ab/delivered", bearer: bearer)
        #expect(answer.status == 400)
        #expect(answer.json["error"] == "INVALID_NOTIFICATION_ID")
    }

    @Test("a bearer token of absurd length or an empty one is no token: 401, the store never asked to compare it")
    func absurdBearer() async throws {
        let harness = try RouterHarness()
        _ = try await harness.register(user: "alice")
        for header in ["Bearer " + String(repeating: "a", count: 300), "Bearer ", "Basic YWxpY2U6cHc=", "bearer"] {
            #expect(await harness.call("GET", "/api/v1/notifications/n/details", headers: ["authorization": header]).status == 401, "\(header.prefix(20))")
        }
    }
}
