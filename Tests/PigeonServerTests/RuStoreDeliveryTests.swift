import Foundation
import PigeonCore
import PigeonDomain
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// RuStore push end to end: SOAP send → engine → RuStore (the simulator's) over HTTP/2 + TLS.
@Suite("RuStore push end to end", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct RuStoreDeliveryTests {
    static let token = "rustore-" + String(repeating: "A1b2_", count: 8)

    @Test("the push goes out as RuStore documents it; a gone token is removed; a 429 is retried after its Retry-After")
    func delivery() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, database, harness, subscriptions) = (setting.simulator, setting.database, setting.harness, setting.subscriptions)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "ru-user", deviceId: "phone", platform: .rustore, pushToken: Self.token)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "ru-gone", deviceId: "phone", platform: .rustore, pushToken: "rustore-gone-token-1")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "ru-busy", deviceId: "phone", platform: .rustore, pushToken: "rustore-busy-token-1")
        simulator.rustore.setFaults(FaultRules(["rustore-gone-token-1": .init(.unregistered), "rustore-busy-token-1": .init(.tooManyRequests, times: 1)]))

        _ = try await harness.soap(GatewayHarness.sendNotification(id: "ru-1", recipients: ["ru-user", "ru-gone", "ru-busy"]))
        let states = try await setting.settledStates(id: "ru-1")
        #expect(states == [RecipientState(user: "ru-user", state: .sent), RecipientState(user: "ru-gone", state: .invalidSubscription),
                           RecipientState(user: "ru-busy", state: .sent)])
        #expect(Set(simulator.rustore.deliveries.map(\.token)) == [Self.token, "rustore-busy-token-1"])
        #expect(try await subscriptions.devices(user: "ru-gone").isEmpty)
        #expect(try await subscriptions.devices(user: "ru-busy").count == 1)
        let attempts = try await database.pool.withConnection {
            try $0.query(sql: "SELECT attempts FROM deliveries WHERE user_id = 'ru-busy'").scalar.flatMap(Int.init)
        }
        #expect(attempts == 2)
        let delivered = try #require(simulator.rustore.deliveries.first { $0.token == Self.token })
        let message = try #require((try JSONSerialization.jsonObject(with: delivered.message) as? [String: Any])?["message"] as? [String: Any])
        #expect((message["notification"] as? [String: Any])?["body"] as? String == "Hello")
        #expect((message["data"] as? [String: String])?["notificationId"] == "ru-1")
        #expect(((message["android"] as? [String: Any])?["ttl"] as? String)?.hasSuffix("s") == true)
        let metrics = try await harness.request("GET", "/metrics")
        #expect(metrics.text.contains("pigeon_push_outcomes_total{app=\"default\",outcome=\"token_dead\",platform=\"RUSTORE\"} 1"))
        #expect(metrics.text.contains("pigeon_push_retries_total{app=\"default\",cause=\"throttled\",platform=\"RUSTORE\"} 1"))
        await harness.gateway.shutdown()
        await database.drop()
    }

    @Test("a wrong service token: the push waits and is retried, the device is kept, the refusal is counted")
    func refusedServiceToken() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let harness = try await GatewayHarness {
            $0.point(at: fixture.simulator, database: database.url)
            $0.defaultApp.rustore.serviceToken = "revoked-token"
        }
        let subscriptions = SubscriptionStore(pool: database.pool, identifiers: UserIdentifiers(caseInsensitive: false))
        try await subscriptions.subscribe(bankClientId: "bank", userId: "ru-user", deviceId: "phone", platform: .rustore, pushToken: Self.token)
        _ = try await harness.soap(GatewayHarness.sendNotification(id: "ru-403", recipients: ["ru-user"], timeout: "3600"))
        var refused = false
        for _ in 0..<300 where !refused {
            try await Task.sleep(for: .milliseconds(100))
            refused = try await harness.request("GET", "/metrics").text
                .contains("pigeon_push_credentials_refused_total{app=\"default\",service=\"rustore\"} 1")
        }
        #expect(refused)
        // The refusal is counted as the push returns; its outcome is written a moment later.
        var row: [String?]?
        for _ in 0..<300 {
            row = try await database.pool.withConnection {
                try $0.query(sql: "SELECT state, next_attempt_at > now() + interval '30 seconds' FROM deliveries WHERE user_id = 'ru-user' AND attempts >= 1").rows.first
            }
            if row != nil { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(row?[0] == "QUEUED")
        #expect(row?[1] == "t", "retried a minute later, not at once")
        #expect(try await subscriptions.devices(user: "ru-user").count == 1)
        #expect(fixture.simulator.rustore.deliveries.isEmpty)
        await harness.gateway.shutdown()
        await database.drop()
    }
}
