import Foundation
import PigeonDomain
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// Web Push end to end: SOAP send → engine → the simulator's push service, which checks VAPID
/// and decrypts each message with its subscription's private key.
@Suite("Web Push end to end", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct WebPushDeliveryTests {
    func subscription(_ simulator: Simulator) throws -> WebPushSubscription {
        try WebPushSubscription(json: JSONSerialization.jsonObject(with: simulator.webPush.subscribe(baseURL: simulator.baseURL)))
    }

    @Test("the browser's push service gets the message encrypted for its subscription and VAPID-signed; a gone subscription is removed")
    func delivery() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, database, harness, subscriptions) = (setting.simulator, setting.database, setting.harness, setting.subscriptions)
        let browser = try subscription(simulator), gone = try subscription(simulator)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "web-user", deviceId: "browser", platform: .web, pushToken: browser.storedForm)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "web-gone", deviceId: "browser", platform: .web, pushToken: gone.storedForm)
        let goneId = String(gone.endpoint.split(separator: "/").last ?? "")
        simulator.webPush.setFaults(FaultRules([goneId: .init(.unregistered)]))

        _ = try await harness.soap(GatewayHarness.sendNotification(id: "web-1", recipients: ["web-user", "web-gone"], timeout: "600"))
        let states = try await setting.settledStates(id: "web-1")
        #expect(states == [RecipientState(user: "web-user", state: .sent), RecipientState(user: "web-gone", state: .invalidSubscription)])
        let delivered = try #require(simulator.webPush.deliveries.first)
        #expect(simulator.webPush.deliveries.count == 1)
        let payload = try #require(try JSONSerialization.jsonObject(with: delivered.plaintext) as? [String: Any])
        #expect(payload["notificationId"] as? String == "web-1")
        #expect(payload["text"] as? String == "Hello")
        #expect(delivered.urgency == "normal" && delivered.topic == "web-1")
        #expect((delivered.ttl.flatMap(Int.init) ?? 0) > 500)
        #expect(simulator.webPush.vapidRefusals == 0)
        #expect(try await subscriptions.devices(user: "web-gone").isEmpty)
        await harness.gateway.shutdown()
        await database.drop()
    }
}
