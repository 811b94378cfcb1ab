import Foundation
import OutboundHTTP
import PigeonCrypto
@testable import PigeonSimulator
import PigeonTestSupport
@testable import PushCore
@testable import PushTransport
import Testing

/// Our FCM side (service-account assertion, cached access token, message builder, HTTP/2
/// client) against the simulator's OAuth endpoint and FCM v1 checks.
@Suite("FCM simulator", .enabled(if: TestTier.runsIntegration, "integration tier (sockets): PIGEON_TEST_TIER"))
struct FCMSimulatorTests {
    final class Setup: @unchecked Sendable {
        let certificates: H2ServerTests.Certificates
        let now = ManualClock(Date(timeIntervalSince1970: 1_700_000_000))
        let account: ServiceAccount
        let simulator: FCMSimulator
        let server: H2Server
        let client: HTTP2Client
        let tokens: FCMAccessTokens

        init() throws {
            certificates = try H2ServerTests.Certificates()
            let keyPEM = String(decoding: try CredentialsHelper.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]), as: UTF8.self)
            let json: [String: Any] = ["type": "service_account", "project_id": "bank-prod", "private_key_id": "k1", "private_key": keyPEM,
                                       "client_email": "pigeon@bank-prod.iam.gserviceaccount.com"]
            account = try ServiceAccount(json: try JSONSerialization.data(withJSONObject: json))
            let clock = now
            simulator = FCMSimulator(accounts: [account.clientEmail: try account.key.publicKey()], clock: { clock.read() })
            let simulator = simulator
            server = try H2Server(configuration: .init(certificateFile: certificates.certificate, keyFile: certificates.key)) { request in
                request.path == "/token" ? simulator.handleToken(request) : simulator.handleSend(request)
            }
            client = try HTTP2Client(configuration: .init(caFile: certificates.certificate))
            tokens = FCMAccessTokens(account: account, tokenURL: "https://127.0.0.1:\(server.port)/token", client: client, clock: { clock.read() })
        }

        deinit {
            client.shutdown()
            server.stop()
        }

        func send(_ registrationToken: String) async throws -> PushOutcome {
            let message = PushMessage(notificationId: "n-7", text: "Баланс обновлён", data: ["type": "MESSAGE"], urgency: .normal, expiresAt: now.read() + 600)
            let request = try FCMRequestBuilder(projectId: account.projectId).request(for: message, registrationToken: registrationToken, now: now.read())
            var headers = request.headers
            headers["authorization"] = "Bearer \(try await tokens.token())"
            let response = try await client.send(url: "https://127.0.0.1:\(server.port)\(request.path)", headers: headers, body: request.body, wantHeaders: ["retry-after"])
            return FCMResponse.classify(status: response.status, body: response.body, retryAfter: response.headers["retry-after"])
        }
    }

    @Test("one access token serves concurrent senders until shortly before it expires")
    func accessTokenCaching() async throws {
        let setup = try Setup()
        let outcomes = try await withThrowingTaskGroup(of: PushOutcome.self) { group in
            for index in 0..<40 { group.addTask { try await setup.send("tok-\(index)") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0.label == "accepted" })
        #expect(setup.simulator.accessTokensIssued == 1)
        #expect(await setup.tokens.fetched == 1)
        #expect(setup.simulator.deliveries.count == 40)
        let recorded = try JSONSerialization.jsonObject(with: setup.simulator.deliveries[0].message) as? [String: Any]
        let android = (recorded?["message"] as? [String: Any])?["android"] as? [String: Any]
        #expect(android?["ttl"] as? String == "600s")
        #expect(android?["priority"] as? String == "NORMAL")

        setup.now.set(setup.now.read() + 3300)
        #expect(try await setup.send("tok-late").label == "accepted")
        #expect(setup.simulator.accessTokensIssued == 2)
    }

    @Test("fault rules map to token-dead and retry outcomes")
    func faults() async throws {
        let setup = try Setup()
        setup.simulator.setFaults(FaultRules([
            "gone": .init(.unregistered),
            "junk": .init(.badDeviceToken),
            "slow": .init(.serviceUnavailable, times: 1),
            "full": .init(.tooManyRequests, times: 1),
            "away": .init(.goAway, times: 1),
        ]))
        #expect(try await setup.send("gone") == .tokenDead(reason: "UNREGISTERED", since: nil))
        #expect(try await setup.send("junk") == .tokenDead(reason: "INVALID_ARGUMENT", since: nil))
        #expect(try await setup.send("slow") == .retry(reason: "UNAVAILABLE", after: nil))
        #expect(try await setup.send("slow").label == "accepted")
        #expect(try await setup.send("full") == .retry(reason: "QUOTA_EXCEEDED", after: .seconds(1), cause: .throttled))
        // GOAWAY after an accepted message: the next send goes out on a new connection.
        #expect(try await setup.send("away").label == "accepted")
        #expect(try await setup.send("away").label == "accepted")
        #expect(setup.server.connectionsAccepted >= 2)
        #expect(setup.simulator.deliveries.map(\.registrationToken) == ["slow", "away", "away"])
    }

    @Test("an accepted send is answered as FCM answers it: the message's name, projects/ID/messages/ID")
    func acceptedAnswerNamesTheMessage() async throws {
        let setup = try Setup()
        let message = PushMessage(notificationId: "n-8", text: "x", data: [:], urgency: .normal, expiresAt: setup.now.read() + 600)
        let request = try FCMRequestBuilder(projectId: setup.account.projectId).request(for: message, registrationToken: "named", now: setup.now.read())
        var headers = request.headers
        headers["authorization"] = "Bearer \(try await setup.tokens.token())"
        let response = try await setup.client.send(url: "https://127.0.0.1:\(setup.server.port)\(request.path)", headers: headers, body: request.body)
        let answer = try JSONSerialization.jsonObject(with: response.body) as? [String: String]
        #expect(answer?["name"] == setup.simulator.deliveries.last?.name)
        #expect(answer?["name"]?.hasPrefix("projects/bank-prod/messages/") == true, "\(String(decoding: response.body, as: UTF8.self))")
    }

    @Test("sends without a valid access token are refused; foreign assertions get no token")
    func authentication() async throws {
        let setup = try Setup()
        let response = try await setup.client.send(url: "https://127.0.0.1:\(setup.server.port)/v1/projects/bank-prod/messages:send",
                                                   headers: ["authorization": "Bearer made-up"], body: Data(#"{"message":{"token":"t"}}"#.utf8))
        #expect(FCMResponse.classify(status: response.status, body: response.body) == .refreshCredentials(reason: "UNAUTHENTICATED"))
        let otherKey = String(decoding: try CredentialsHelper.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]), as: UTF8.self)
        let impostor = try ServiceAccount(json: try JSONSerialization.data(withJSONObject: [
            "project_id": "bank-prod", "private_key": otherKey, "client_email": setup.account.clientEmail]))
        let stolen = FCMAccessTokens(account: impostor, tokenURL: "https://127.0.0.1:\(setup.server.port)/token", client: setup.client)
        await #expect(throws: FCMAccessTokens.TokenError.self) { try await stolen.token() }
    }
}
