import Foundation
import PigeonCore
@testable import PigeonDeviceAPI
@testable import PigeonServer
import PushCore
import Testing
import PigeonTestSupport

/// Registration's `tokenType` (CONTRACT §9): `fid` for Android devices addressed by their
/// Firebase Installation ID, checked for the FID's shape and stored so FCM v1's `fid` target
/// addresses them.
@Suite("Registration token types", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct TokenTypeTests {
    static func body(platform: String = "ANDROID", token: String, tokenType: String?) -> Data {
        let type = tokenType.map { #","tokenType":"\#($0)""# } ?? ""
        return Data(#"{"bankClientId":"b","userId":"u","deviceId":"d","platform":"\#(platform)","pushToken":"\#(token)"\#(type)}"#.utf8)
    }

    static func code(_ body: Data) -> String? {
        do {
            _ = try RegisterRequest(body)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("a FID is stored as fid: and the id; the default is a registration token")
    func accepted() throws {
        let fid = "dW1xY4z6AbcXk3tPq9R2u8"
        #expect(try RegisterRequest(Self.body(token: fid, tokenType: "fid")).pushToken == "fid:" + fid)
        let token = String(repeating: "f", count: 140)
        #expect(try RegisterRequest(Self.body(token: token, tokenType: nil)).pushToken == token)
        #expect(try RegisterRequest(Self.body(token: token, tokenType: "token")).pushToken == token)
    }

    @Test("bad token types and FIDs are refused", arguments: [
        (body(token: "dW1xY4z6AbcXk3tPq9R2u", tokenType: "fid"), "INVALID_PUSH_TOKEN"),  // 21 characters
        (body(token: "aW1xY4z6AbcXk3tPq9R2u8", tokenType: "fid"), "INVALID_PUSH_TOKEN"),  // not Firebase's prefix
        (body(token: "dW1xY4z6AbcXk3tPq9R2u+", tokenType: "fid"), "INVALID_PUSH_TOKEN"),  // not base64url
        (body(platform: "IOS", token: String(repeating: "ab", count: 32), tokenType: "fid"), "INVALID_FIELD"),
        (body(platform: "HUAWEI", token: "dW1xY4z6AbcXk3tPq9R2u8", tokenType: "fid"), "INVALID_FIELD"),
        (body(token: String(repeating: "f", count: 140), tokenType: "apns"), "INVALID_FIELD"),
        (body(token: "fid:" + String(repeating: "f", count: 140), tokenType: nil), "INVALID_PUSH_TOKEN"),
    ])
    func refused(body: Data, code: String) {
        #expect(Self.code(body) == code)
    }

    @Test("FCM's body addresses a stored FID with the fid target, anything else with token")
    func fcmTarget() throws {
        let message = PushMessage(notificationId: "n", text: "t", urgency: .high, expiresAt: Date().addingTimeInterval(60))
        let prepared = try FCMRequestBuilder(projectId: "p").prepare(message, now: Date())
        let fid = try JSONSerialization.jsonObject(with: prepared.body(registrationToken: "fid:cXk3tPq9R2u8vW1xY4z6Ab")) as? [String: Any]
        #expect((fid?["message"] as? [String: Any])?["fid"] as? String == "cXk3tPq9R2u8vW1xY4z6Ab")
        #expect((fid?["message"] as? [String: Any])?["token"] == nil)
        let token = try JSONSerialization.jsonObject(with: prepared.body(registrationToken: "abc:APA91")) as? [String: Any]
        #expect((token?["message"] as? [String: Any])?["token"] as? String == "abc:APA91")
        // Huawei has no fid target: its token list carries the stored form unchanged.
        let huawei = try HuaweiRequestBuilder(appId: "1").prepare(message, now: Date()).body(registrationToken: "fid:x")
        #expect(String(decoding: huawei, as: UTF8.self).contains(#""token":["fid:x"]"#))
    }
}
