import Foundation
@testable import PigeonConfiguration
import PigeonCore
import PigeonDomain
@testable import PigeonServer
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import Testing

/// Two apps in one gateway, each with its own APNs key, topic and FCM project, and the default
/// app's sandbox tokens on their own host: every device's push goes out with its app's
/// credentials to its environment's host.
@Suite("Several apps in one gateway", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct AppsDeliveryTests {
    /// A simulator on a free port, with the credentials in `folder` (made there or reused); made
    /// off the cooperative pool, as ``SimulatorFixture/start(enforceRapidResetLimit:clock:)`` is.
    static func simulator(folder: URL) async throws -> Simulator {
        try await BlockingWork.run("simulator") { try simulatorBlocking(folder: folder) }
    }

    private static func simulatorBlocking(folder: URL) throws -> Simulator {
        var lastError: (any Error)?
        for _ in 0..<10 {
            do {
                return try Simulator(folder: folder, port: UInt16.random(in: 40_000...60_000))
            } catch let error as H2Server.StartError {
                lastError = error
            }
        }
        throw lastError ?? CocoaError(.featureUnsupported)
    }

    @Test("retail (default app) production and sandbox tokens and a business app: each push with its app's key, topic and host")
    func twoAppsAndSandbox() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("apps-\(UUID().uuidString)")
        let retailFolder = base.appendingPathComponent("retail"), businessFolder = base.appendingPathComponent("business")
        // Production and sandbox hosts of the default app share its credentials (one folder).
        let production = try await Self.simulator(folder: retailFolder)
        let sandbox = try await Self.simulator(folder: retailFolder)
        let business = try await Self.simulator(folder: businessFolder)
        defer {
            [production, sandbox, business].forEach { $0.stop() }
            try? FileManager.default.removeItem(at: base)
        }
        // One CA bundle trusting both sets of simulators.
        let bundle = base.appendingPathComponent("ca-bundle.pem")
        try (String(contentsOfFile: production.credentials.caFile, encoding: .utf8)
            + String(contentsOfFile: business.credentials.caFile, encoding: .utf8)).write(to: bundle, atomically: true, encoding: .utf8)

        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let harness = try await GatewayHarness { configuration in
            configuration.point(at: production, database: database.url)
            configuration.apns.sandboxEndpoint = sandbox.baseURL
            configuration.tlsCaFile = bundle.path
            var app = GatewayConfiguration.PushApp()
            app.apns.endpoint = business.baseURL
            app.apns.keyPath = business.credentials.apnsKey
            app.apns.keyId = SimulatorCredentials.keyId
            app.apns.teamId = SimulatorCredentials.teamId
            app.apns.topic = "com.example.business"
            app.fcm.serviceAccountPath = business.credentials.serviceAccount
            app.fcm.endpoint = business.baseURL
            app.fcm.tokenEndpoint = business.baseURL + "/token"
            configuration.apps["business"] = app
        }
        let subscriptions = SubscriptionStore(pool: database.pool, identifiers: UserIdentifiers(caseInsensitive: false))
        try await subscriptions.subscribe(bankClientId: "bank", userId: "anna", deviceId: "iphone", platform: .ios, pushToken: "aa01")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "boris", deviceId: "iphone", platform: .ios, pushToken: "bb02",
                                          environment: .sandbox)
        // One phone, both apps: two devices.
        try await subscriptions.subscribe(bankClientId: "bank", userId: "anna", deviceId: "iphone", platform: .ios, pushToken: "cc03",
                                          appId: "business")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "boris", deviceId: "pixel", platform: .android, pushToken: "fcm:business",
                                          appId: "business")
        #expect(try await subscriptions.devices(user: "anna").map(\.appId) == ["", "business"])

        _ = try await harness.soap(GatewayHarness.sendNotification(id: "apps-1", recipients: ["anna", "boris"]))
        let store = NotificationStore(pool: database.pool, identifiers: UserIdentifiers(caseInsensitive: false))
        var pushes = 0
        for _ in 0..<300 {
            pushes = production.apns.deliveries.count + sandbox.apns.deliveries.count + business.apns.deliveries.count
                + business.fcm.deliveries.count
            if pushes >= 4, try await store.deliveryStatus(id: "apps-1")?.allSatisfy({ $0.state == .sent }) == true { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(production.apns.deliveries.map(\.deviceToken) == ["aa01"])
        #expect(production.apns.deliveries.map(\.topic) == [SimulatorCredentials.topic])
        #expect(sandbox.apns.deliveries.map(\.deviceToken) == ["bb02"])
        // The business simulator checks provider tokens against the business key only.
        #expect(business.apns.deliveries.map(\.deviceToken) == ["cc03"])
        #expect(business.apns.deliveries.map(\.topic) == ["com.example.business"])
        #expect(business.fcm.deliveries.map(\.registrationToken) == ["fcm:business"])
        #expect(production.fcm.deliveries.isEmpty && sandbox.fcm.deliveries.isEmpty)
        #expect(try await store.deliveryStatus(id: "apps-1") == [RecipientState(user: "anna", state: .sent), RecipientState(user: "boris", state: .sent)])
        let metrics = try await harness.request("GET", "/metrics")
        #expect(metrics.text.contains("pigeon_push_outcomes_total{app=\"business\",outcome=\"accepted\",platform=\"IOS\"} 1"))
        #expect(metrics.text.contains("pigeon_push_outcomes_total{app=\"default\",outcome=\"accepted\",platform=\"IOS\"} 2"))
        #expect(metrics.text.contains("pigeon_push_connections_opened{app=\"business\",service=\"fcm\"}"))
        await harness.gateway.shutdown()
        await database.drop()
    }
}
