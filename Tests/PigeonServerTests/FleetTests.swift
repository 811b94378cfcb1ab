import Foundation
import PigeonDomain
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// A fleet whose configurations differ for a while (a rolling change): two gateways on one
/// database, one without app "business". Deliveries of the routes a gateway does not serve are
/// left to one that does; with none, they expire at their timeout with the reason.
@Suite("A fleet that agrees", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct FleetTests {
    @Test("a gateway without app business leaves business devices to the one that has it; with none serving, EXPIRED at the timeout with 'no gateway serves'")
    func differentAppSets() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let subscriptions = SubscriptionStore(pool: database.pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let store = NotificationStore(pool: database.pool, identifiers: UserIdentifiers(caseInsensitive: false))
        let businessToken = String(repeating: "b1", count: 32), retailToken = String(repeating: "a1", count: 32)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "only-business", deviceId: "iphone", platform: .ios, pushToken: businessToken, appId: "business")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "both", deviceId: "iphone-b", platform: .ios, pushToken: String(repeating: "b2", count: 32), appId: "business")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "both", deviceId: "iphone-r", platform: .ios, pushToken: retailToken)

        // Gateway A: the default app only. Gateway B: the default app and "business" (same
        // simulator, another topic).
        let narrow = try await GatewayHarness { $0.point(at: simulator, database: database.url) }
        var wide: GatewayHarness? = try await GatewayHarness { configuration in
            configuration.point(at: simulator, database: database.url)
            var business = configuration.defaultApp
            business.apns.topic = "com.example.business"
            configuration.apps["business"] = business
        }
        _ = try await narrow.soap(GatewayHarness.sendNotification(id: "fleet-1", recipients: ["only-business", "both"], timeout: "600"))
        var topics: [String: String] = [:]
        for _ in 0..<600 {
            topics = Dictionary(simulator.apns.deliveries.map { ($0.deviceToken, $0.topic ?? "") }) { first, _ in first }
            if topics.count == 3 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(topics == [businessToken: "com.example.business", String(repeating: "b2", count: 32): "com.example.business",
                           retailToken: SimulatorCredentials.topic], "every device pushed once, each by a gateway serving its app")
        // The outcomes are written just after the service answers: waited for, not assumed.
        var states: [DeliveryState] = []
        for _ in 0..<600 where states != [.sent, .sent] {
            states = try await store.deliveryStatus(id: "fleet-1")?.map(\.state) ?? []
            if states != [.sent, .sent] { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(states == [.sent, .sent])
        #expect(simulator.apns.deliveries.count == 3, "nothing pushed twice")
        // The narrow gateway warned at its start about the business devices it does not serve.
        var warned = false
        for _ in 0..<300 where !warned {
            warned = narrow.logs.records.contains { $0.message.hasPrefix("devices of a route this gateway does not serve")
                && $0.metadata["route"]?.contains("business") == true && $0.metadata["devices"] == "2" }
            if !warned { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(warned)
        #expect(wide?.logs.records.contains { $0.message.hasPrefix("devices of a route this gateway does not serve") } == false)

        // Only the narrow gateway left: the business-only user's delivery waits, then expires
        // with the reason when its time runs out (moved to now, as the clock would).
        await wide?.gateway.shutdown()
        wide = nil
        _ = try await narrow.soap(GatewayHarness.sendNotification(id: "fleet-2", recipients: ["only-business"], timeout: "600"))
        func lastError() async throws -> String? {
            try await database.pool.withConnection {
                try $0.query(sql: "SELECT last_error FROM deliveries d JOIN notifications n ON n.key = d.notification_key WHERE n.id = 'fleet-2'").scalar
            }
        }
        var reason: String?
        for _ in 0..<600 where reason == nil {
            reason = try await lastError()
            if reason == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(reason?.contains("no gateway serves IOS business") == true, "\(reason ?? "nil")")
        #expect(try await store.deliveryStatus(id: "fleet-2")?.map(\.state) == [.queued])
        _ = try await database.pool.withConnection { connection in
            try connection.query(sql: "UPDATE notifications SET expires_at = now() WHERE id = 'fleet-2'")
            try connection.query(sql: "UPDATE deliveries SET expires_at = now() WHERE notification_key = (SELECT key FROM notifications WHERE id = 'fleet-2')")
        }
        var state: DeliveryState?
        for _ in 0..<600 where state != .expired {
            state = try await store.deliveryStatus(id: "fleet-2")?.first?.state
            if state != .expired { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(state == .expired)
        #expect(try await lastError()?.contains("no gateway serves") == true, "the reason survives the expiry")
        #expect(simulator.apns.deliveries.count == 3)
        await narrow.gateway.shutdown()
        await database.drop()
    }
}
