import Foundation
import OutboundHTTP
import PigeonCrypto
@testable import PigeonSimulator
import PigeonTestSupport
@testable import PushCore
@testable import PushTransport
import Synchronization
import Testing

/// Our APNs requests (builder, provider tokens, HTTP/2 client) against the simulator's
/// validation, over real HTTP/2 and TLS.
@Suite("APNs simulator", .enabled(if: TestTier.runsIntegration, "integration tier (sockets): PIGEON_TEST_TIER"))
struct APNsSimulatorTests {
    final class Setup: @unchecked Sendable {
        let certificates: H2ServerTests.Certificates
        let credentials: APNsSigningCredentials
        let now = ManualClock(Date(timeIntervalSince1970: 1_700_000_000))
        let simulator: APNsSimulator
        let server: H2Server
        let client: HTTP2Client

        init() throws {
            certificates = try H2ServerTests.Certificates()
            let keyPEM = String(decoding: try CredentialsHelper.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]), as: UTF8.self)
            credentials = try APNsSigningCredentials(p8PEM: keyPEM, keyId: "KEY1234567", teamId: "TEAM123456")
            let clock = now
            simulator = APNsSimulator(
                authentication: .init(signingKeys: ["KEY1234567": ("TEAM123456", try credentials.key.publicKey())], acceptClientCertificates: false),
                clock: { clock.read() })
            let simulator = simulator
            server = try H2Server(configuration: .init(certificateFile: certificates.certificate, keyFile: certificates.key)) { simulator.handle($0) }
            client = try HTTP2Client(configuration: .init(caFile: certificates.certificate))
        }

        deinit {
            client.shutdown()
            server.stop()
        }

        func push(_ token: String, text: String = "Код 4242", providerToken: String?) async throws -> (HTTP2Client.Response, PushOutcome) {
            let message = PushMessage(notificationId: "n-1", text: text, badge: 1, data: ["type": "PIN_CODE"], urgency: .high,
                                      expiresAt: now.read() + 300)
            let request = try APNsRequestBuilder(topic: "com.bank.app").request(for: message, deviceToken: token, apnsId: UUID())
            var headers = request.headers
            if let providerToken { headers["authorization"] = "bearer \(providerToken)" }
            let response = try await client.send(url: "https://127.0.0.1:\(server.port)\(request.path)", headers: headers, body: request.body,
                                                 wantHeaders: ["apns-id", "retry-after"])
            let outcome = APNsResponse.classify(status: response.status, body: response.body, apnsId: response.headers["apns-id"], retryAfter: response.headers["retry-after"])
            return (response, outcome)
        }
    }

    @Test("a valid push is accepted and recorded with its headers")
    func accepted() async throws {
        let setup = try Setup()
        let token = try setup.credentials.providerToken(issuedAt: setup.now.read())
        let (response, outcome) = try await setup.push("a1b2c3", providerToken: token)
        #expect(response.status == 200)
        guard case .accepted(let id?) = outcome else { Issue.record("not accepted: \(outcome)"); return }
        let delivery = try #require(setup.simulator.deliveries.first)
        #expect(delivery.apnsId == id)
        #expect(delivery.deviceToken == "a1b2c3")
        #expect(delivery.topic == "com.bank.app")
        #expect(delivery.priority == "10")
        #expect(delivery.collapseId == "n-1")
        let payload = try JSONSerialization.jsonObject(with: delivery.payload) as? [String: Any]
        #expect((payload?["aps"] as? [String: Any])?["alert"] as? String == "Код 4242")
    }

    @Test("a connection is bound to the team of its first push: another team's key on it is refused (InvalidProviderToken); a key restricted to sandbox is refused on the production host; the token of zeros is no device's")
    func connectionBinding() async throws {
        let setup = try Setup()
        let other = try APNsSigningCredentials(
            p8PEM: String(decoding: try CredentialsHelper.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]), as: UTF8.self),
            keyId: "KEY0000002", teamId: "TEAM000002")
        setup.simulator.addSigningKey(id: "KEY0000002", team: "TEAM000002", key: try other.key.publicKey())
        let token = try setup.credentials.providerToken(issuedAt: setup.now.read())
        #expect(try await setup.push("a1", providerToken: token).1.label == "accepted")
        // The client reuses its one connection: the other team's key is refused on it.
        let foreign = try other.providerToken(issuedAt: setup.now.read())
        #expect(try await setup.push("a2", providerToken: foreign).1 == .refreshCredentials(reason: "InvalidProviderToken"))
        #expect(setup.simulator.deliveries.map(\.keyId) == ["KEY1234567"])
        #expect(setup.simulator.deliveries.first?.environment == .production)
        setup.simulator.restrictKey("KEY1234567", to: .init(environment: .sandbox))
        guard case .failed(let reason) = try await setup.push("a3", providerToken: token).1 else { Issue.record("not refused"); return }
        #expect(reason.hasPrefix("BadEnvironmentKeyIdInToken"))
        setup.simulator.restrictKey("KEY1234567", to: nil)
        #expect(try await setup.push(String(repeating: "0", count: 64), providerToken: token).1 == .tokenDead(reason: "BadDeviceToken", since: nil))
    }

    @Test("fault rules: dead tokens, retries that then succeed")
    func faults() async throws {
        let setup = try Setup()
        setup.simulator.setFaults(FaultRules([
            "dead01": .init(.unregistered),
            "bad002": .init(.badDeviceToken),
            "beef03": .init(.tooManyRequests, times: 2),
            "cafe04": .init(.serviceUnavailable, times: 1),
        ]))
        let token = try setup.credentials.providerToken(issuedAt: setup.now.read())
        let dead = try await setup.push("dead01", providerToken: token).1
        #expect(dead == .tokenDead(reason: "Unregistered", since: Date(timeIntervalSince1970: 1_700_000_000)))
        #expect(try await setup.push("bad002", providerToken: token).1 == .tokenDead(reason: "BadDeviceToken", since: nil))
        #expect(try await setup.push("beef03", providerToken: token).1 == .retry(reason: "TooManyRequests", after: .seconds(1), cause: .throttled))
        #expect(try await setup.push("beef03", providerToken: token).1 == .retry(reason: "TooManyRequests", after: .seconds(1), cause: .throttled))
        #expect(try await setup.push("beef03", providerToken: token).1.label == "accepted")
        #expect(try await setup.push("cafe04", providerToken: token).1 == .retry(reason: "ServiceUnavailable", after: nil))
        #expect(try await setup.push("cafe04", providerToken: token).1.label == "accepted")
        #expect(setup.simulator.deliveries.map(\.deviceToken) == ["beef03", "cafe04"])
    }

    @Test("provider tokens: missing, foreign, expired, and refreshed too often")
    func providerTokens() async throws {
        let setup = try Setup()
        #expect(try await setup.push("a1", providerToken: nil).1 == .refreshCredentials(reason: "MissingProviderToken"))
        let stranger = try APNsSigningCredentials(
            p8PEM: String(decoding: try CredentialsHelper.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]), as: UTF8.self),
            keyId: "KEY1234567", teamId: "TEAM123456")
        #expect(try await setup.push("a1", providerToken: try stranger.providerToken(issuedAt: setup.now.read())).1 == .refreshCredentials(reason: "InvalidProviderToken"))
        let start = setup.now.read()
        let old = try setup.credentials.providerToken(issuedAt: start - 2 * 3600)
        #expect(try await setup.push("a1", providerToken: old).1 == .refreshCredentials(reason: "ExpiredProviderToken"))

        let first = try setup.credentials.providerToken(issuedAt: start)
        #expect(try await setup.push("a1", providerToken: first).1.label == "accepted")
        setup.now.set(start + 5 * 60)
        let tooSoon = try setup.credentials.providerToken(issuedAt: start + 5 * 60)
        #expect(try await setup.push("a1", providerToken: tooSoon).1 == .retry(reason: "TooManyProviderTokenUpdates", after: nil, cause: .throttled))
        setup.now.set(start + 25 * 60)
        let later = try setup.credentials.providerToken(issuedAt: start + 25 * 60)
        #expect(try await setup.push("a1", providerToken: later).1.label == "accepted")
        #expect(setup.simulator.providerTokenRefreshes == 1)
    }

    @Test("oversized payloads are refused with 413 PayloadTooLarge")
    func payloadTooLarge() async throws {
        let setup = try Setup()
        let token = try setup.credentials.providerToken(issuedAt: setup.now.read())
        let response = try await setup.client.send(
            url: "https://127.0.0.1:\(setup.server.port)/3/device/abcd",
            headers: ["authorization": "bearer \(token)", "apns-topic": "t"],
            body: Data(#"{"aps":{"alert":"\#(String(repeating: "x", count: 5000))"}}"#.utf8))
        #expect(response.status == 413)
        #expect(APNsResponse.classify(status: response.status, body: response.body, apnsId: nil) == .failed(reason: "PayloadTooLarge"))
    }
}

/// A clock tests move by hand.
final class ManualClock: Sendable {
    private let value: Mutex<Date>
    init(_ start: Date) { value = Mutex(start) }
    func read() -> Date { value.withLock { $0 } }
    func set(_ date: Date) { value.withLock { $0 = date } }
}

/// The openssl command line, for making keys.
enum CredentialsHelper {
    static func openssl(_ arguments: [String]) throws -> Data {
        try ChildProcess.runBlocking("/usr/bin/openssl", arguments)
    }
}
