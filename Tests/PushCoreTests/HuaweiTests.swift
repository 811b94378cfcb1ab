import Foundation
import Testing
@testable import PushCore
import PigeonTestSupport

@Suite("Huawei Push Kit requests and answers", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct HuaweiTests {
    @Test("the request: one token in Huawei's token list, the data as one JSON string, urgency from the priority, TTL from the timeout, click_action opening the app")
    func request() throws {
        let now = Date(timeIntervalSince1970: 1_000_000)
        let message = PushMessage(notificationId: "pin-1", text: "Код 1234", data: ["type": "PIN_CODE"], urgency: .high,
                                  expiresAt: now.addingTimeInterval(300))
        let prepared = try HuaweiRequestBuilder(appId: "100200").prepare(message, now: now)
        #expect(prepared.path == "/v1/100200/messages:send")
        let body = String(decoding: prepared.body(registrationToken: "IQAAA-token"), as: UTF8.self)
        #expect(body == #"{"validate_only":false,"message":{"android":{"notification":{"body":"Код 1234","click_action":{"type":3},"tag":"pin-1"},"#
            + #""ttl":"300s","urgency":"HIGH"},"data":"{\"type\":\"PIN_CODE\",\"notificationId\":\"pin-1\"}","#
            + #""notification":{"body":"Код 1234"},"token":["IQAAA-token"]}}"#)
        let normal = try HuaweiRequestBuilder(appId: "1").prepare(PushMessage(notificationId: "n", text: "t", urgency: .normal, expiresAt: now), now: now)
        #expect(String(decoding: normal.body(registrationToken: "x"), as: UTF8.self).contains(#""urgency":"NORMAL""#))
    }

    @Test("message classification: a code goes with hmsCategory, a type with its own category, anything else and a confidential data message with none")
    func categories() throws {
        let now = Date(timeIntervalSince1970: 1_000_000)
        let builder = HuaweiRequestBuilder(appId: "1", categories: HuaweiCategories(codes: "ACCOUNT", byType: ["UNIVERSAL": "MARKETING"]))
        func android(_ message: PushMessage) throws -> [String: Any]? {
            let body = try builder.prepare(message, now: now).body(registrationToken: "x")
            return ((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["message"] as? [String: Any])?["android"] as? [String: Any]
        }
        func message(_ type: String) -> PushMessage {
            PushMessage(notificationId: "n", text: "t", data: ["type": type], urgency: .high, expiresAt: now.addingTimeInterval(60))
        }
        #expect(try android(message("PIN_CODE"))?["category"] as? String == "ACCOUNT")
        #expect(try android(message("UNIVERSAL"))?["category"] as? String == "MARKETING")
        #expect(try android(message("INFO"))?["category"] == nil)
        var sealed = message("PIN_CODE")
        sealed.confidential = .fetch
        #expect(try android(sealed)?["category"] == nil, "a confidential code is a data message the app shows itself")
        #expect(HuaweiCategories(byType: ["PIN_CODE": "FINANCE"]).category(forType: "PIN_CODE") == "FINANCE")
        #expect(HuaweiCategories().category(forType: "PIN_CODE") == nil, "none unless the bank says it holds the right")
    }

    @Test("answers by Huawei's result codes", arguments: [
        (200, #"{"code":"80000000","msg":"Success","requestId":"r1"}"#, PushOutcome.accepted(id: "r1")),
        (200, #"{"code":"80100000","msg":"{\"success\":0,\"failure\":1,\"illegal_tokens\":[\"tok\"]}","requestId":"r2"}"#,
         .tokenDead(reason: "80100000 illegal token", since: nil)),
        (200, #"{"code":"80100000","msg":"{\"success\":1,\"failure\":1,\"illegal_tokens\":[\"other\"]}","requestId":"r3"}"#, .accepted(id: "r3")),
        (200, #"{"code":"80100000","msg":"{\"illegalTokens\":{\"noRight\":[\"tok\"]},\"failure\":1}"}"#, .tokenDead(reason: "80100000 illegal token", since: nil)),
        (400, #"{"code":"80300007","msg":"All the tokens are invalid"}"#, .tokenDead(reason: "80300007", since: nil)),
        (401, #"{"code":"80200003","msg":"Oauth token expired"}"#, .refreshCredentials(reason: "80200003")),
        (401, #"{"code":"80200001","msg":"Oauth authentication error"}"#, .refreshCredentials(reason: "80200001")),
        (401, "", .refreshCredentials(reason: "HTTP 401")),
        (503, #"{"code":"80000001","msg":"traffic control"}"#, .retry(reason: "HTTP 503 traffic control", after: nil)),
        (500, #"{"code":"81000001","msg":"System inner error"}"#, .retry(reason: "81000001", after: nil)),
        (502, "bad gateway", .retry(reason: "HTTP 502", after: nil)),
        (400, #"{"code":"80100003","msg":"Illegal payload"}"#, .failed(reason: "80100003: Illegal payload")),
    ])
    func answers(status: Int, body: String, expected: PushOutcome) {
        #expect(HuaweiResponse.classify(status: status, body: Data(body.utf8), token: "tok") == expected)
    }

    @Test("traffic control honours Retry-After when Huawei gives it")
    func trafficControl() {
        #expect(HuaweiResponse.classify(status: 503, body: Data(), token: "t", retryAfter: "9") == .retry(reason: "HTTP 503 traffic control", after: .seconds(9)))
    }
}
