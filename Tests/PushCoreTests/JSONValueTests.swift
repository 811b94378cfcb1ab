import Foundation
import Testing
@testable import PushCore
import PigeonTestSupport

@Suite("JSON payload encoding", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct JSONValueTests {
    @Test("strings with quotes, backslashes, control characters and non-ASCII text read back unchanged")
    func escaping() throws {
        let tricky = "Код \"4242\"\\ line\nnext\ttab\r\u{01}\u{1F} emoji 🕊 </script>"
        let value = JSONValue.object([("text", .string(tricky)), ("badge", .int(-3)), ("nested", .object([("k", .string(""))]))])
        let data = value.encoded
        let parsed = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(parsed["text"] as? String == tricky)
        #expect(parsed["badge"] as? Int == -3)
        #expect((parsed["nested"] as? [String: Any])?["k"] as? String == "")
        #expect(String(decoding: data, as: UTF8.self).hasPrefix(#"{"text":"Код \"4242\"\\ line\nnext\ttab\r\u0001\u001f"#))
    }

    @Test("APNs payloads keep custom keys apart from aps and carry the notification id")
    func apnsPayload() throws {
        let message = PushMessage(notificationId: "n-1", text: "t", badge: 2, data: ["type": "URL", "aps": "ignored", "notificationId": "spoof"], urgency: .high, expiresAt: Date())
        let data = try APNsRequestBuilder(topic: "x").payload(for: message)
        #expect(String(decoding: data, as: UTF8.self) == #"{"aps":{"alert":"t","badge":2,"sound":"default"},"type":"URL","notificationId":"n-1"}"#)
    }
}
