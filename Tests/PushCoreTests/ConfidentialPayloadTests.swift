import Foundation
import PushCore
import Testing
import PigeonTestSupport

/// The payload shapes of a confidential push (CONTRACT §8), service by service, without I/O.
@Suite("Confidential payload shapes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConfidentialPayloadTests {
    static let envelope = E2EEnvelope(keyId: "k1", ephemeralPublicKey: Data([4] + [UInt8](repeating: 1, count: 64)),
                                      salt: Data(repeating: 2, count: 16), ciphertext: Data(repeating: 3, count: 272))
    static func message(_ mode: ConfidentialMode) -> PushMessage {
        PushMessage(notificationId: "n-1", text: "New secure message", badge: 1, sound: "default", urgency: .high,
                    expiresAt: Date(timeIntervalSince1970: 2_000_000_060), confidential: mode)
    }
    static let now = Date(timeIntervalSince1970: 2_000_000_000)

    static func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("APNs: the neutral alert with mutable-content, the id and the envelope as an object — or fetch")
    func apns() throws {
        let payload = try Self.object(APNsRequestBuilder(topic: "t").payload(for: Self.message(.encrypted(Self.envelope))))
        #expect(Set(payload.keys) == ["aps", "notificationId", "e2e"])
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect((aps["alert"] as? [String: Any])?["body"] as? String == "New secure message")
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["sound"] as? String == "default")
        let e2e = try #require(payload["e2e"] as? [String: Any])
        #expect(e2e["v"] as? Int == 1 && e2e["kid"] as? String == "k1")
        #expect((e2e["salt"] as? String) == "AgICAgICAgICAgICAgICAg")
        #expect((e2e["ct"] as? String)?.contains("=") == false)
        let fetch = try Self.object(APNsRequestBuilder(topic: "t").payload(for: Self.message(.fetch)))
        #expect(Set(fetch.keys) == ["aps", "notificationId", "fetch"])
        #expect(fetch["fetch"] as? Bool == true)
        let headers = try APNsRequestBuilder(topic: "t").prepare(Self.message(.fetch)).headers
        #expect(headers["apns-priority"] == "10" && headers["apns-push-type"] == "alert")
    }

    @Test("a sealed message too large for its service goes out as fetch on every service, not failed; a message in clear too large still fails")
    func tooLargeSealedGoesAsFetch() throws {
        let big = E2EEnvelope(keyId: "k1", ephemeralPublicKey: Data([4] + [UInt8](repeating: 1, count: 64)),
                              salt: Data(repeating: 2, count: 16), ciphertext: Data(repeating: 3, count: 4_000))
        let sealed = Self.message(.encrypted(big))
        let apns = APNsRequestBuilder(topic: "t")
        #expect(throws: PushMessageError.self) { try apns.prepare(sealed) }
        let prepared = try PushMessage.prepared(sealed) { message throws(PushMessageError) in try apns.prepare(message) }.get()
        #expect(try Self.object(prepared.body)["fetch"] as? Bool == true)
        let fcmBuilder = FCMRequestBuilder(projectId: "p"), ruStoreBuilder = RuStoreRequestBuilder(projectId: "p")
        let androids = [
            try PushMessage.prepared(sealed) { message throws(PushMessageError) in try fcmBuilder.prepare(message, now: Self.now) }.get(),
            try PushMessage.prepared(sealed) { message throws(PushMessageError) in try ruStoreBuilder.prepare(message, now: Self.now) }.get(),
        ]
        for fcm in androids {
            let data = try #require(try Self.object(fcm.body(registrationToken: "tok"))["message"] as? [String: Any])["data"] as? [String: String]
            #expect(data?["fetch"] == "true" && data?["e2e"] == nil)
        }
        var clear = Self.message(.fetch)
        clear.confidential = nil
        clear.text = String(repeating: "x", count: 5_000)
        #expect(throws: PushMessageError.self) {
            try PushMessage.prepared(clear) { message throws(PushMessageError) in try apns.prepare(message) }.get()
        }
    }

    @Test("FCM and RuStore: data only, the envelope as a JSON string; FCM at high priority")
    func fcmAndRuStore() throws {
        for prepared in [try FCMRequestBuilder(projectId: "p").prepare(Self.message(.encrypted(Self.envelope)), now: Self.now),
                         try RuStoreRequestBuilder(projectId: "p").prepare(Self.message(.encrypted(Self.envelope)), now: Self.now)] {
            let message = try #require(try Self.object(prepared.body(registrationToken: "tok"))["message"] as? [String: Any])
            #expect(message["notification"] == nil)
            let android = try #require(message["android"] as? [String: Any])
            #expect(android["notification"] == nil)
            #expect(android["ttl"] as? String == "60s")
            let data = try #require(message["data"] as? [String: String])
            #expect(Set(data.keys) == ["notificationId", "e2e"])
            let e2e = try Self.object(Data(try #require(data["e2e"]).utf8))
            #expect(e2e["kid"] as? String == "k1")
        }
        let fcm = try #require(try Self.object(FCMRequestBuilder(projectId: "p").prepare(Self.message(.fetch), now: Self.now)
            .body(registrationToken: "tok"))["message"] as? [String: Any])
        #expect((fcm["android"] as? [String: Any])?["priority"] as? String == "HIGH")
        #expect(fcm["data"] as? [String: String] == ["notificationId": "n-1", "fetch": "true"])
    }

    @Test("Huawei: a data message (its one string), high urgency, no notification")
    func huawei() throws {
        let body = try HuaweiRequestBuilder(appId: "a").prepare(Self.message(.encrypted(Self.envelope)), now: Self.now).body(registrationToken: "tok")
        let message = try #require(try Self.object(body)["message"] as? [String: Any])
        #expect(message["notification"] == nil)
        let android = try #require(message["android"] as? [String: Any])
        #expect(android["urgency"] as? String == "HIGH" && android["notification"] == nil)
        let data = try Self.object(Data(try #require(message["data"] as? String).utf8))
        #expect(data["notificationId"] as? String == "n-1")
        #expect((data["e2e"] as? String).map { $0.hasPrefix(#"{"v":1,"kid":"k1""#) } == true)
    }

    @Test("Web Push: the neutral text, the id and the envelope")
    func webPush() throws {
        let plaintext = try Self.object(WebPushResponse.plaintext(Self.message(.encrypted(Self.envelope))))
        #expect(Set(plaintext.keys) == ["text", "notificationId", "e2e"])
        #expect(plaintext["text"] as? String == "New secure message")
    }

    @Test("the sealed content: id, text, type, then target and details when there are any")
    func content() {
        let json = SealedContent.json(notificationId: "n", text: "Code 1", type: "PIN_CODE", target: "1", details: [("name", "A"), ("name", "B")])
        #expect(String(decoding: json, as: UTF8.self) == #"{"notificationId":"n","text":"Code 1","type":"PIN_CODE","target":"1","details":{"name":"A"}}"#)
        #expect(String(decoding: SealedContent.json(notificationId: "n", text: "t", type: "MESSAGE", target: nil, details: nil), as: UTF8.self)
                == #"{"notificationId":"n","text":"t","type":"MESSAGE"}"#)
    }
}
