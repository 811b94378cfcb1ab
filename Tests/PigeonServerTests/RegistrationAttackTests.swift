import Foundation
import PigeonBankStub
@testable import PigeonConfiguration
import PigeonCore
import PigeonHTTP
@testable import PigeonServer
import PigeonStore
import PigeonTestSupport
import Testing

/// Attacks on the device registration flow (CONTRACT §2): each must fail, over real HTTP against a
/// running gateway and `pigeon bank-stub`.
@Suite("Registration attacks", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct RegistrationAttackTests {
    static let userToken = String(repeating: "a1", count: 32)
    static let attackerToken = String(repeating: "ee", count: 32)

    /// carol's phone subscribed through the SMS flow; returns its bearer token.
    func subscribeCarol(_ flow: DeviceFlowHarness) async throws -> String {
        let pending = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "carol", device: "pixel", token: Self.userToken))
        let registrationId = try #require(pending.json["registrationId"])
        let code = try #require(flow.stub.code(bankClientId: "bank", userId: "carol", deviceId: "pixel"))
        let verified = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "carol", device: "pixel", registrationId: registrationId, code: code))
        return try #require(verified.json["authenticationToken"])
    }

    func carolsPushToken(_ flow: DeviceFlowHarness) async throws -> String? {
        try await flow.database.pool.withConnection { try $0.query(sql: "SELECT push_token FROM devices WHERE user_id = 'carol' AND device_id = 'pixel'").scalar }
    }

    @Test("a known device re-registered without its bearer token, with a forged or an expired one: the bank is asked, the device keeps its push token")
    func takeoverWithoutProof() async throws {
        let flow = try await DeviceFlowHarness(stub: .init(bankClients: ["bank"], fixedCode: "424242"))
        let bearer = try await subscribeCarol(flow)
        let attack = DeviceFlowHarness.registration(user: "carol", device: "pixel", token: Self.attackerToken)
        for forged in [nil, "forged-" + String(repeating: "x", count: 40), bearer + "x"] {
            let calls = flow.stub.calls
            let answer = try await flow.call("POST", "/api/v1/devices/register", body: attack, bearer: forged)
            #expect(answer.status == 202, "\(answer.body)")
            #expect(answer.json["authenticationToken"] == nil)
            #expect(flow.stub.calls == calls + 2, "checkSubscriptionAuthorized, then authorizeSubscription")
            #expect(try await carolsPushToken(flow) == Self.userToken)
        }
        // The real device's token still works.
        #expect(try await flow.call("POST", "/api/v1/notifications/x/delivered", bearer: bearer).status == 404)
        // Expired: not a proof any more.
        _ = try await flow.database.pool.withConnection { try $0.query(sql: "UPDATE devices SET auth_token_expires_at = now() - interval '1 second' WHERE user_id = 'carol'") }
        let expired = try await flow.call("POST", "/api/v1/devices/register", body: attack, bearer: bearer)
        #expect(expired.status == 202)
        #expect(try await carolsPushToken(flow) == Self.userToken)
        // Another device's valid token proves nothing about this one.
        let alicesBearer = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "carol", device: "other"), bearer: bearer)
        #expect(alicesBearer.status == 202)
        await flow.stop()
    }

    @Test("a pending registration registered over by someone else: the user's code subscribes the user's push token only")
    func pendingOverwritten() async throws {
        let flow = try await DeviceFlowHarness(stub: .init(bankClients: ["bank"], fixedCode: "424242"))
        let user = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "erin", device: "e", token: Self.userToken))
        let attacker = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "erin", device: "e", token: Self.attackerToken))
        let userId = try #require(user.json["registrationId"])
        let attackerId = try #require(attacker.json["registrationId"])
        #expect(userId != attackerId)
        let verified = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "erin", device: "e", registrationId: userId, code: "424242"))
        #expect(verified.status == 200)
        let tokens: [String] = try await flow.database.pool.withConnection { connection in
            try connection.query(sql: "SELECT push_token FROM devices WHERE user_id = 'erin'").rows.compactMap { $0[0] }
        }
        #expect(tokens == [Self.userToken])
        // The attacker's registration died with the verification.
        let late = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(user: "erin", device: "e", registrationId: attackerId, code: "424242"))
        #expect(late.status == 404)
        await flow.stop()
    }

    @Test("50 concurrent wrong codes: at most verificationAttempts reach the bank")
    func concurrentGuesses() async throws {
        let flow = try await DeviceFlowHarness(stub: .init(bankClients: ["bank"], fixedCode: "424242")) {
            $0.deviceLimits.registrationsPerAddressPerMinute = 0
        }
        let pending = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "frank", device: "f"))
        let registrationId = try #require(pending.json["registrationId"])
        let callsBefore = flow.stub.calls
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for guess in 0..<50 {
                group.addTask {
                    try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(
                        user: "frank", device: "f", registrationId: registrationId, code: String(format: "%06d", guess))).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        let attempts = GatewayConfiguration.DeviceLimits().verificationAttempts
        #expect(flow.stub.calls - callsBefore <= attempts)
        #expect(statuses.filter { $0 == 403 }.count <= attempts)
        // Past the limit a guess is refused before the bank (429), or finds the registration
        // already dropped by the last allowed wrong code (404): which, depends on the timing.
        #expect(statuses.allSatisfy { [403, 404, 429].contains($0) })
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'frank'") == 0)
        await flow.stop()
    }

    @Test("a register flood from one address and for one user: 429 with Retry-After, the bank sees at most the limit")
    func registerFlood() async throws {
        // The per-address minute stands still: the twenty calls count in one window however long
        // a loaded machine takes to make them (under load here they took over a minute).
        let flow = try await DeviceFlowHarness(stub: .init(bankClients: ["bank"]), clockStoppedAt: Date(timeIntervalSince1970: 1_800_000_000)) {
            $0.deviceLimits.registrationsPerAddressPerMinute = 5
            $0.deviceLimits.registrationsPerUserPerHour = 1000
        }
        var limited = 0
        var retryAfter: String?
        let calls = flow.stub.calls
        for index in 0..<20 {
            let answer = try await flow.callWithHeaders("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "flood-\(index)", device: "d"))
            if answer.status == 429 {
                limited += 1
                #expect(answer.json["error"] == "RATE_LIMITED")
                retryAfter = answer.headers["retry-after"]
            }
        }
        #expect(limited == 15)
        #expect(Int(retryAfter ?? "") ?? 0 >= 1)
        #expect(flow.stub.calls - calls <= 5 * 2, "check and authorize per admitted registration")
        #expect(flow.stub.smsSent <= 5)
        await flow.stop()

        let perUser = try await DeviceFlowHarness(stub: .init(bankClients: ["bank"])) {
            $0.deviceLimits.registrationsPerAddressPerMinute = 0
            $0.deviceLimits.registrationsPerUserPerHour = 3
        }
        var statuses: [Int] = []
        for index in 0..<10 {
            statuses.append(try await perUser.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "victim", device: "d-\(index)")).status)
        }
        #expect(statuses.filter { $0 == 202 }.count == 3)
        #expect(statuses.filter { $0 == 429 }.count == 7)
        #expect(perUser.stub.smsSent == 3)
        await perUser.stop()
    }

    @Test("the same device registered 20 times at once: every call answered 200, one device row, the last token the only one")
    func concurrentSameDevice() async throws {
        let flow = try await DeviceFlowHarness {
            $0.deviceLimits.registrationsPerAddressPerMinute = 0
            $0.deviceLimits.registrationsPerUserPerHour = 0
        }
        let tokens = try await withThrowingTaskGroup(of: DeviceFlowHarness.Answer.self) { group in
            for _ in 0..<20 {
                group.addTask { try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "alice", device: "same")) }
            }
            return try await group.reduce(into: [DeviceFlowHarness.Answer]()) { $0.append($1) }
        }
        #expect(tokens.allSatisfy { $0.status == 200 }, "\(tokens.map(\.status))")
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice' AND device_id = 'same'") == 1)
        var valid = 0
        for answer in tokens {
            if try await flow.call("POST", "/api/v1/notifications/x/delivered", bearer: answer.json["authenticationToken"]).status == 404 { valid += 1 }
        }
        #expect(valid == 1)
        await flow.stop()
    }

    @Test("a bank that drops the connection after acting on authorizeSubscription: exactly one SMS, a clear error")
    func noSecondSMS() async throws {
        let flow = try await DeviceFlowHarness(stub: .init(bankClients: ["bank"]))
        flow.stub.setMode(.dropAfterAction)
        let answer = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "gina", device: "g"))
        #expect(answer.status == 503)
        #expect(answer.json["error"] == "BANK_PROXY_UNAVAILABLE")
        #expect(flow.stub.smsSent == 1)
        #expect(try await flow.count("SELECT count(*) FROM pending_registrations WHERE user_id = 'gina'") == 0)
        await flow.stop()
    }

    @Test("the bank channel over HTTPS with the bank's own CA, a client certificate and Basic credentials; answers in either shape")
    func bankChannel() async throws {
        let simulator = try await SimulatorFixture.start()
        defer { simulator.stop() }
        let credentials = simulator.simulator.credentials
        let tls = HTTPServer.TLS(
            certificatePEM: try String(contentsOfFile: credentials.serverCertificate, encoding: .utf8),
            keyPEM: try String(contentsOfFile: credentials.serverKey, encoding: .utf8),
            clientCAPEM: try String(contentsOfFile: credentials.caFile, encoding: .utf8))
        let stubConfiguration = BankStub.Configuration(bankClients: ["bank"], authorizedUsers: ["alice"],
                                                       requiredCredentials: ("gateway", "s3cret"), tls: tls, bareReturn: true)
        let flow = try await DeviceFlowHarness(stub: stubConfiguration) {
            $0.bankChannel.caFile = credentials.caFile
            $0.bankChannel.clientCertificatePath = credentials.clientCertificate
            $0.bankChannel.clientKeyPath = credentials.clientKey
            $0.bankChannel.username = "gateway"
            $0.bankChannel.password = "s3cret"
        }
        #expect(flow.stub.serviceURL.hasPrefix("https:"))
        _ = try await flow.register(user: "alice")
        let pending = try await flow.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "hank", device: "h"))
        #expect(pending.status == 202, "\(pending.body)")
        await flow.stop()

        // Without the gateway's credentials the bank refuses, and nothing is registered.
        let refused = try await DeviceFlowHarness(stub: stubConfiguration) {
            $0.bankChannel.caFile = credentials.caFile
            $0.bankChannel.clientCertificatePath = credentials.clientCertificate
            $0.bankChannel.clientKeyPath = credentials.clientKey
        }
        let answer = try await refused.call("POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "alice"))
        #expect(answer.status == 503)
        #expect(try await refused.count("SELECT count(*) FROM devices") == 0)
        await refused.stop()
    }

    @Test("sbiOutboundWebServiceURL must be https unless loopback or allowInsecureBank")
    func insecureBankURL() throws {
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration.parse(text: "sbiOutboundWebServiceURL = http://10.1.2.3/sbi\n", name: "t")
        }
        _ = try GatewayConfiguration.parse(text: "sbiOutboundWebServiceURL = http://127.0.0.1:8088/sbi\n", name: "t")
        _ = try GatewayConfiguration.parse(text: "sbiOutboundWebServiceURL = https://bank.example/sbi\n", name: "t")
        _ = try GatewayConfiguration.parse(text: "sbiOutboundWebServiceURL = http://10.1.2.3/sbi\nallowInsecureBank = true\n", name: "t")
    }
}
