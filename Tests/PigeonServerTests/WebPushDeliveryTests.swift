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

    @Test("Safari's declarative Web Push: a subscription on Apple's push service (here localhost, named in webPushAppleHosts) gets web_push 8030 with title, body, navigate and app_badge as well as the service worker's members; another push service's gets the classic payload")
    func declarative() async throws {
        let setting = try await EndToEnd.start {
            let port = $0.defaultApp.webPush.allowedHosts.patterns.first?.split(separator: ":").last.map(String.init) ?? "443"
            $0.defaultApp.webPush.allowedHosts = WebPushHosts(patterns: ["127.0.0.1:\(port)", "localhost:\(port)"])
            $0.defaultApp.webPush.appleHosts = WebPushHosts(patterns: ["localhost:\(port)"])
            $0.defaultApp.webPush.declarativeNavigate = "https://bank.example/inbox"
            $0.defaultApp.webPush.declarativeTitle = "Bank"
        }
        defer { setting.fixture.stop() }
        let (simulator, database, harness, subscriptions) = (setting.simulator, setting.database, setting.harness, setting.subscriptions)
        let apple = try WebPushSubscription(json: JSONSerialization.jsonObject(with: simulator.webPush.subscribe(baseURL: "https://localhost:\(simulator.port)")))
        let other = try subscription(simulator)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "safari", deviceId: "browser", platform: .web, pushToken: apple.storedForm)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "chrome", deviceId: "browser", platform: .web, pushToken: other.storedForm)
        _ = try await harness.soap("""
            <inb:sendNotification><notification><id>web-d</id><pushContent><badge>3</badge><text>Card payment 120 EUR</text><type>UNIVERSAL</type>\
            <details><entry><key>target</key><value>https://bank.example/payments/77</value></entry></details></pushContent>\
            <recipients>safari</recipients><recipients>chrome</recipients><timeout>600</timeout></notification></inb:sendNotification>
            """)
        #expect(try await setting.settledStates(id: "web-d") == [RecipientState(user: "safari", state: .sent), RecipientState(user: "chrome", state: .sent)])
        func payload(_ subscription: WebPushSubscription) throws -> [String: Any] {
            let id = String(subscription.endpoint.split(separator: "/").last ?? "")
            let delivered = try #require(simulator.webPush.deliveries.first { $0.subscriptionId == id })
            return try #require(try JSONSerialization.jsonObject(with: delivered.plaintext) as? [String: Any])
        }
        let safari = try payload(apple)
        #expect(safari["web_push"] as? Int == 8030, "\(safari)")
        let shown = try #require(safari["notification"] as? [String: Any])
        #expect(shown["title"] as? String == "Bank" && shown["body"] as? String == "Card payment 120 EUR")
        #expect(shown["navigate"] as? String == "https://bank.example/payments/77" && shown["app_badge"] as? Int == 3 && shown["mutable"] == nil, "\(shown)")
        #expect(safari["notificationId"] as? String == "web-d" && safari["text"] as? String == "Card payment 120 EUR", "the service worker's members stay")
        let chrome = try payload(other)
        #expect(chrome["web_push"] == nil && chrome["notification"] == nil && chrome["text"] as? String == "Card payment 120 EUR", "\(chrome)")
        #expect(simulator.webPush.vapidRefusals == 0)
        await harness.gateway.shutdown()
        await database.drop()
    }
}
