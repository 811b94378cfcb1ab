import Foundation
@testable import PigeonConfiguration
import PigeonCrypto
import PigeonDomain
@testable import PigeonServer
import PigeonSimulator
import PigeonTestSupport
import Testing

/// APNs binds a connection to the team, key type and environment of its first push and refuses
/// any other on it (since the keys of 2025). The simulator does the same, so a gateway that shared
/// a connection between two apps' keys, or between production and sandbox, would fail here.
@Suite("APNs keys and connections", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct APNsKeysTests {
    static let businessKeyId = "BKEY000002", businessTeamId = "BTEAM00002", businessTopic = "com.example.business"

    /// A second `.p8` key, made with openssl, and its public half.
    static func secondKey() throws -> (path: String, publicKey: PublicKey) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_\(UUID().uuidString).p8").path
        _ = try ChildProcess.runBlocking("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path])
        return (path, try PrivateKey(pem: try String(contentsOfFile: path, encoding: .utf8)).publicKey())
    }

    @Test("two apps with two keys of two teams on one APNs host, each to production and sandbox: every push rides a connection of its own key and environment, and all 40 are accepted")
    func twoKeysTwoEnvironments() async throws {
        let key = try Self.secondKey()
        defer { try? FileManager.default.removeItem(atPath: key.path) }
        let setting = try await EndToEnd.start { configuration in
            var app = GatewayConfiguration.PushApp()
            app.apns.endpoint = configuration.apns.endpoint
            app.apns.sandboxEndpoint = configuration.apns.sandboxEndpoint
            app.apns.keyPath = key.path
            app.apns.keyId = Self.businessKeyId
            app.apns.teamId = Self.businessTeamId
            app.apns.topic = Self.businessTopic
            configuration.apps["business"] = app
        }
        defer { setting.fixture.stop() }
        let (simulator, harness, subscriptions) = (setting.simulator, setting.harness, setting.subscriptions)
        simulator.apns.addSigningKey(id: Self.businessKeyId, team: Self.businessTeamId, key: key.publicKey)
        var users: [String] = []
        for index in 0..<10 {
            let user = "two-keys-\(index)"
            users.append(user)
            let suffix = String(format: "%02x", index)
            try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "retail", platform: .ios, pushToken: "a0\(suffix)")
            try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "retail-dev", platform: .ios, pushToken: "a1\(suffix)",
                                              environment: .sandbox)
            try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "business", platform: .ios, pushToken: "b0\(suffix)",
                                              appId: "business")
            try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "business-dev", platform: .ios, pushToken: "b1\(suffix)",
                                              appId: "business", environment: .sandbox)
        }
        _ = try await harness.soap(GatewayHarness.sendNotification(id: "two-keys", recipients: users))
        #expect(try await setting.settledStates(id: "two-keys").allSatisfy { $0.state == .sent })
        var deliveries = simulator.apns.deliveries
        for _ in 0..<300 where deliveries.count < 40 {
            try await Task.sleep(for: .milliseconds(100))
            deliveries = simulator.apns.deliveries
        }
        #expect(deliveries.count == 40)
        // Each token's push with its app's key, topic and environment.
        for delivery in deliveries {
            let business = delivery.deviceToken.hasPrefix("b")
            let sandbox = delivery.deviceToken.dropFirst().hasPrefix("1")
            #expect(delivery.keyId == (business ? Self.businessKeyId : SimulatorCredentials.keyId), "\(delivery.deviceToken)")
            #expect(delivery.topic == (business ? Self.businessTopic : SimulatorCredentials.topic), "\(delivery.deviceToken)")
            #expect(delivery.environment == (sandbox ? .sandbox : .production), "\(delivery.deviceToken)")
        }
        // No connection carried two keys or two environments.
        let byConnection = Dictionary(grouping: deliveries, by: \.connectionId)
        for (connection, pushes) in byConnection {
            let kinds = Set(pushes.map { "\($0.keyId ?? "-") \($0.environment.rawValue)" })
            #expect(kinds.count == 1, "connection \(connection) carried \(kinds.sorted())")
        }
        #expect(Set(deliveries.map { "\($0.keyId ?? "-") \($0.environment.rawValue)" }).count == 4)
        #expect(simulator.apns.providerTokenRefreshes == 0)
        await harness.gateway.shutdown()
        await setting.database.drop()
    }
}
