import Foundation
import Testing
@testable import PushCore
import PigeonTestSupport

/// Safari's declarative Web Push payload (issue 50): what the browser shows by itself, and the
/// service worker's members beside it.
@Suite("Declarative Web Push payload", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct WebPushDeclarativeTests {
    let now = Date(timeIntervalSince1970: 1_000_000)

    func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("web_push 8030, the title, the text as body, an https target as navigate (else the app's page), the badge as app_badge; the service worker's members stay")
    func inClear() throws {
        let message = PushMessage(notificationId: "n-1", text: "Card payment", badge: 2, data: ["type": "UNIVERSAL", "target": "https://bank.example/p/1"],
                                  urgency: .normal, expiresAt: now.addingTimeInterval(60))
        let payload = try json(WebPushResponse.declarativePlaintext(message, title: "Bank", navigate: "https://bank.example/inbox"))
        #expect(payload["web_push"] as? Int == 8030)
        let shown = try #require(payload["notification"] as? [String: Any])
        #expect(shown["title"] as? String == "Bank" && shown["body"] as? String == "Card payment")
        #expect(shown["navigate"] as? String == "https://bank.example/p/1" && shown["app_badge"] as? Int == 2 && shown["mutable"] == nil)
        #expect(payload["notificationId"] as? String == "n-1" && payload["badge"] as? Int == 2)
        let product = PushMessage(notificationId: "n-2", text: "New offer", data: ["type": "PRODUCT", "target": "card-42"], urgency: .normal,
                                  expiresAt: now.addingTimeInterval(60))
        let fallback = try json(WebPushResponse.declarativePlaintext(product, title: "Bank", navigate: "https://bank.example/inbox"))
        #expect((fallback["notification"] as? [String: Any])?["navigate"] as? String == "https://bank.example/inbox", "a target that is no URL: the app's page")
    }

    @Test("a confidential notification: its neutral text, the app's page (never its target), mutable so a service worker may decrypt it; no content in clear")
    func confidential() throws {
        var message = PushMessage(notificationId: "c-1", text: "You have a new message", data: ["type": "PIN_CODE", "target": "https://bank.example/secret"],
                                  urgency: .high, expiresAt: now.addingTimeInterval(60))
        message.confidential = .fetch
        let data = WebPushResponse.declarativePlaintext(message, title: "Bank", navigate: "https://bank.example/inbox")
        let payload = try json(data)
        let shown = try #require(payload["notification"] as? [String: Any])
        #expect(shown["body"] as? String == "You have a new message" && shown["navigate"] as? String == "https://bank.example/inbox")
        #expect(shown["mutable"] as? Bool == true && payload["fetch"] as? Bool == true)
        #expect(!String(decoding: data, as: UTF8.self).contains("secret"))
    }
}
