import Foundation
import PigeonCore
@testable import PigeonConfiguration
import PigeonDomain
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// Huawei Push Kit end to end: SOAP send → engine → Push Kit (the simulator's) over HTTP/2 + TLS,
/// with the OAuth client-credentials token.
@Suite("Huawei Push Kit end to end", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct HuaweiDeliveryTests {
    static let token = "IQAAAACy0" + String(repeating: "kZ9_", count: 10)

    @Test("pushes go out with an access token; 80300007 removes the token; after the token expires a new one is fetched and the push goes")
    func delivery() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, database, harness, subscriptions) = (setting.simulator, setting.database, setting.harness, setting.subscriptions)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "hw-user", deviceId: "phone", platform: .huawei, pushToken: Self.token)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "hw-gone", deviceId: "phone", platform: .huawei, pushToken: "IQAAA-gone-token")
        simulator.huawei.setFaults(FaultRules(["IQAAA-gone-token": .init(.unregistered)]))

        _ = try await harness.soap(GatewayHarness.sendNotification(id: "hw-1", recipients: ["hw-user", "hw-gone"]))
        #expect(try await setting.settledStates(id: "hw-1") == [RecipientState(user: "hw-user", state: .sent),
                                                                 RecipientState(user: "hw-gone", state: .invalidSubscription)])
        #expect(simulator.huawei.deliveries.map(\.token) == [Self.token])
        #expect(try await subscriptions.devices(user: "hw-gone").isEmpty)
        #expect(simulator.huawei.accessTokensIssued == 1)
        let message = try #require((try JSONSerialization.jsonObject(with: simulator.huawei.deliveries[0].message) as? [String: Any])?["message"] as? [String: Any])
        #expect(message["token"] as? [String] == [Self.token])
        #expect((message["android"] as? [String: Any])?["urgency"] as? String == "NORMAL")
        #expect((message["data"] as? String)?.contains(#""notificationId":"hw-1""#) == true)

        // An hour later Huawei refuses the cached token (80200003): one new token, the push goes.
        simulator.huawei.expireAccessTokens()
        _ = try await harness.soap(GatewayHarness.sendNotification(id: "hw-2", recipients: ["hw-user"]))
        #expect(try await setting.settledStates(id: "hw-2") == [RecipientState(user: "hw-user", state: .sent)])
        #expect(simulator.huawei.deliveries.count == 2)
        #expect(simulator.huawei.accessTokensIssued == 2)
        let metrics = try await harness.request("GET", "/metrics")
        #expect(metrics.text.contains("pigeon_push_outcomes_total{app=\"default\",outcome=\"token_dead\",platform=\"HUAWEI\"} 1"))
        await harness.gateway.shutdown()
        await database.drop()
    }

    @Test("hmsCategory: a PIN code reaches Push Kit with android.category ACCOUNT, a UNIVERSAL notification with the type's MARKETING; an unknown category is refused at load")
    func categories() async throws {
        let setting = try await EndToEnd.start {
            $0.defaultApp.huawei.codesCategory = "ACCOUNT"
            $0.defaultApp.huawei.categoriesByType = ["UNIVERSAL": "MARKETING"]
        }
        defer { setting.fixture.stop() }
        let (simulator, database, harness, subscriptions) = (setting.simulator, setting.database, setting.harness, setting.subscriptions)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "hw-user", deviceId: "phone", platform: .huawei, pushToken: Self.token)
        _ = try await harness.soap("""
            <inb:sendNotification><notification><id>hw-pin</id><pushContent><text>Code 4711</text><type>PIN_CODE</type></pushContent>\
            <recipients>hw-user</recipients><timeout>60</timeout></notification></inb:sendNotification>
            """)
        _ = try await harness.soap(GatewayHarness.sendNotification(id: "hw-news", recipients: ["hw-user"]))
        #expect(try await setting.settledStates(id: "hw-pin") == [RecipientState(user: "hw-user", state: .sent)])
        #expect(try await setting.settledStates(id: "hw-news") == [RecipientState(user: "hw-user", state: .sent)])
        let categories = try simulator.huawei.deliveries.map { delivery -> String? in
            let message = (try JSONSerialization.jsonObject(with: delivery.message) as? [String: Any])?["message"] as? [String: Any]
            let data = message?["data"] as? String ?? ""
            return (data.contains("hw-pin") ? "pin:" : "news:") + ((message?["android"] as? [String: Any])?["category"] as? String ?? "none")
        }
        #expect(Set(categories.compactMap { $0 }) == ["pin:ACCOUNT", "news:MARKETING"], "\(categories)")
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration.parse(text: "hmsCategory = BANKING\n", name: "t") }
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration.parse(text: "hmsCategories = CODES=ACCOUNT\n", name: "t") }
        await harness.gateway.shutdown()
        await database.drop()
    }

    @Test("traffic control (HTTP 503) is retried with back-off; the push arrives")
    func trafficControl() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, database, harness, subscriptions) = (setting.simulator, setting.database, setting.harness, setting.subscriptions)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "hw-busy", deviceId: "phone", platform: .huawei, pushToken: Self.token)
        simulator.huawei.setFaults(FaultRules([Self.token: .init(.serviceUnavailable, times: 1)]))
        _ = try await harness.soap(GatewayHarness.sendNotification(id: "hw-503", recipients: ["hw-busy"], timeout: "600"))
        #expect(try await setting.settledStates(id: "hw-503") == [RecipientState(user: "hw-busy", state: .sent)])
        #expect(simulator.huawei.deliveries.count == 1, "the gateway's log: \(harness.logLines())")
        let metrics = try await harness.request("GET", "/metrics")
        #expect(metrics.text.contains("pigeon_push_retries_total{app=\"default\",cause=\"unavailable\",platform=\"HUAWEI\"} 1"))
        await harness.gateway.shutdown()
        await database.drop()
    }
}
