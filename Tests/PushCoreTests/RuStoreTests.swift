import Foundation
import Testing
@testable import PushCore
import PigeonTestSupport

@Suite("RuStore requests and answers", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct RuStoreTests {
    @Test("the request is FCM v1's shape with one token, the text as notification, every data value a string, the TTL from the timeout")
    func request() throws {
        let now = Date(timeIntervalSince1970: 1_000_000)
        let message = PushMessage(notificationId: "pin-1", text: "Код 1234 \"ok\"", data: ["type": "PIN_CODE"], urgency: .high,
                                  expiresAt: now.addingTimeInterval(120.7))
        let prepared = try RuStoreRequestBuilder(projectId: "proj-1").prepare(message, now: now)
        #expect(prepared.path == "/v1/projects/proj-1/messages:send")
        #expect(prepared.headers == ["content-type": "application/json; charset=utf-8"])
        let body = String(decoding: prepared.body(registrationToken: "tok-\"1\""), as: UTF8.self)
        #expect(body == #"{"message":{"android":{"notification":{"body":"Код 1234 \"ok\""},"ttl":"120s"},"#
            + #""data":{"type":"PIN_CODE","notificationId":"pin-1"},"notification":{"body":"Код 1234 \"ok\""},"token":"tok-\"1\""}}"#)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect((parsed["message"] as? [String: Any])?["token"] as? String == "tok-\"1\"")
    }

    @Test("a message larger than RuStore takes is refused before sending")
    func tooLarge() {
        let message = PushMessage(notificationId: "n", text: String(repeating: "x", count: 5000), urgency: .normal, expiresAt: Date())
        #expect(throws: PushMessageError.self) { try RuStoreRequestBuilder(projectId: "p").prepare(message, now: Date()) }
    }

    @Test("answers: 404 removes the token, 401/403 keep it and retry later as refused credentials, 429/5xx retry after Retry-After, 400 fails", arguments: [
        (200, "{}", nil as String?, PushOutcome.accepted(id: nil)),
        (404, #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#, nil, .tokenDead(reason: "NOT_FOUND", since: nil)),
        (401, #"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#, nil,
         .retry(reason: PushOutcome.credentialsRefusedPrefix + "UNAUTHENTICATED", after: RuStoreResponse.credentialsRetryDelay, cause: .credentials)),
        (403, "", nil, .retry(reason: PushOutcome.credentialsRefusedPrefix + "HTTP 403", after: RuStoreResponse.credentialsRetryDelay, cause: .credentials)),
        (429, #"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}"#, "7", .retry(reason: "HTTP 429", after: .seconds(7), cause: .throttled)),
        (503, #"{"error":{"code":503,"status":"UNAVAILABLE"}}"#, nil, .retry(reason: "UNAVAILABLE", after: nil)),
        (500, "garbage", "2", .retry(reason: "HTTP 500", after: .seconds(2))),
        (400, #"{"error":{"code":400,"message":"bad ttl","status":"INVALID_ARGUMENT"}}"#, nil, .failed(reason: "INVALID_ARGUMENT: bad ttl")),
    ])
    func answers(status: Int, body: String, retryAfter: String?, expected: PushOutcome) {
        #expect(RuStoreResponse.classify(status: status, body: Data(body.utf8), retryAfter: retryAfter) == expected)
    }

    @Test("retry causes: refused static credentials are their own cause, 429 is throttling")
    func causes() {
        #expect(RuStoreResponse.classify(status: 403, body: Data()).retryCause == .credentials)
        #expect(RuStoreResponse.classify(status: 429, body: Data()).retryCause == .throttled)
        #expect(RuStoreResponse.classify(status: 503, body: Data()).retryCause == .unavailable)
    }
}
