import Foundation
import PigeonTestSupport
import Testing
@testable import PushCore

@Suite("APNs and FCM outcomes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct OutcomeTests {
    func json(_ text: String) -> Data { Data(text.utf8) }

    @Test("APNs: every documented status lands in the right class", arguments: [
        (200, "", PushOutcome.accepted(id: "abc")),
        (400, #"{"reason":"BadDeviceToken"}"#, .tokenDead(reason: "BadDeviceToken", since: nil)),
        (400, #"{"reason":"DeviceTokenNotForTopic"}"#, .tokenDead(reason: "DeviceTokenNotForTopic", since: nil)),
        (400, #"{"reason":"BadCollapseId"}"#, .failed(reason: "BadCollapseId")),
        (403, #"{"reason":"ExpiredProviderToken"}"#, .refreshCredentials(reason: "ExpiredProviderToken")),
        (403, #"{"reason":"InvalidProviderToken"}"#, .refreshCredentials(reason: "InvalidProviderToken")),
        (403, #"{"reason":"BadCertificate"}"#, .failed(reason: "BadCertificate")),
        // Keys restricted to an environment or topics (2025): a configuration error, not a token to refresh.
        (403, #"{"reason":"UnrelatedKeyIdInToken"}"#, .failed(reason: "UnrelatedKeyIdInToken: the APNs key is not allowed for this app's topic or environment")),
        (403, #"{"reason":"BadEnvironmentKeyIdInToken"}"#, .failed(reason: "BadEnvironmentKeyIdInToken: the APNs key is not allowed for this app's topic or environment")),
        (403, #"{"reason":"BadEnvironmentKeyInToken"}"#, .failed(reason: "BadEnvironmentKeyInToken: the APNs key is not allowed for this app's topic or environment")),
        (405, #"{"reason":"MethodNotAllowed"}"#, .failed(reason: "MethodNotAllowed")),
        (413, #"{"reason":"PayloadTooLarge"}"#, .failed(reason: "PayloadTooLarge")),
        (429, #"{"reason":"TooManyProviderTokenUpdates"}"#, .retry(reason: "TooManyProviderTokenUpdates", after: nil, cause: .throttled)),
        (429, #"{"reason":"TooManyRequests"}"#, .retry(reason: "TooManyRequests", after: nil, cause: .throttled)),
        (500, #"{"reason":"InternalServerError"}"#, .retry(reason: "InternalServerError", after: nil)),
        (503, #"{"reason":"ServiceUnavailable"}"#, .retry(reason: "ServiceUnavailable", after: nil)),
        (503, "not json", .retry(reason: "HTTP 503", after: nil)),
    ])
    func apns(status: Int, body: String, expected: PushOutcome) {
        #expect(APNsResponse.classify(status: status, body: json(body), apnsId: "abc") == expected)
    }

    @Test("APNs 410 Unregistered carries the time the token stopped being valid")
    func unregistered() {
        let outcome = APNsResponse.classify(status: 410, body: json(#"{"reason":"Unregistered","timestamp":1700000000000}"#), apnsId: nil)
        #expect(outcome == .tokenDead(reason: "Unregistered", since: Date(timeIntervalSince1970: 1_700_000_000)))
    }

    @Test("a key restriction is read back from the outcome classify made, and from nothing else")
    func keyRestrictionReadBack() {
        let restricted = APNsResponse.classify(status: 403, body: Data(#"{"reason":"UnrelatedKeyIdInToken"}"#.utf8), apnsId: nil)
        #expect(APNsResponse.keyRestriction(restricted) == "UnrelatedKeyIdInToken")
        #expect(APNsResponse.keyRestriction(.failed(reason: "BadEnvironmentKeyIdInToken")) == nil, "Apple's word alone is not the classified outcome")
        #expect(APNsResponse.keyRestriction(.failed(reason: "TopicDisallowed")) == nil)
        #expect(APNsResponse.keyRestriction(.refreshCredentials(reason: "InvalidProviderToken")) == nil)
    }

    @Test("Retry-After is honoured as seconds or as an HTTP date")
    func retryAfter() {
        #expect(APNsResponse.classify(status: 429, body: Data(), apnsId: nil, retryAfter: "7") == .retry(reason: "HTTP 429", after: .seconds(7), cause: .throttled))
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(RetryAfter.parse("Tue, 14 Nov 2023 22:13:40 GMT", now: now) == .seconds(20))
        #expect(RetryAfter.parse("soon", now: now) == nil)
        // A date in the past: now; malformed dates and other zones: not understood.
        #expect(RetryAfter.parse("Tue, 14 Nov 2023 22:00:00 GMT", now: now) == .zero)
        for bad in ["Tue, 14 Nov 2023 22:13:40 CET", "Tue 14 Nov 2023 22:13:40 GMT", "Tue, 14 Foo 2023 22:13:40 GMT",
                    "Tue, 32 Nov 2023 22:13:40 GMT", "Tue, 14 Nov 2023 24:13:40 GMT", "-5"] {
            #expect(RetryAfter.parse(bad, now: now) == nil, "\(bad)")
        }
    }

    @Test("FCM: error codes land in the right class", arguments: [
        (200, #"{"name":"projects/p/messages/1"}"#, PushOutcome.accepted(id: "projects/p/messages/1")),
        (404, #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#, .tokenDead(reason: "UNREGISTERED", since: nil)),
        (403, #"{"error":{"code":403,"status":"PERMISSION_DENIED","details":[{"errorCode":"SENDER_ID_MISMATCH"}]}}"#, .tokenDead(reason: "SENDER_ID_MISMATCH", since: nil)),
        (400, #"{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT","details":[{"errorCode":"INVALID_ARGUMENT"}]}}"#, .tokenDead(reason: "INVALID_ARGUMENT", since: nil)),
        (400, #"{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT","details":[{"errorCode":"INVALID_ARGUMENT"}]}}"#, .failed(reason: "INVALID_ARGUMENT: Invalid JSON payload")),
        (503, #"{"error":{"code":503,"status":"UNAVAILABLE","details":[{"errorCode":"UNAVAILABLE"}]}}"#, .retry(reason: "UNAVAILABLE", after: nil)),
        (500, #"{"error":{"code":500,"status":"INTERNAL","details":[{"errorCode":"INTERNAL"}]}}"#, .retry(reason: "INTERNAL", after: nil)),
        (429, #"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"errorCode":"QUOTA_EXCEEDED"}]}}"#, .retry(reason: "QUOTA_EXCEEDED", after: nil, cause: .throttled)),
        (401, #"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#, .refreshCredentials(reason: "UNAUTHENTICATED")),
        (401, #"{"error":{"code":401,"status":"UNAUTHENTICATED","details":[{"errorCode":"THIRD_PARTY_AUTH_ERROR"}]}}"#, .failed(reason: "THIRD_PARTY_AUTH_ERROR")),
    ])
    func fcm(status: Int, body: String, expected: PushOutcome) {
        #expect(FCMResponse.classify(status: status, body: json(body)) == expected)
    }
}

@Suite("Retry schedule", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct RetryScheduleTests {
    let now = Date(timeIntervalSince1970: 1_000_000)

    @Test("delays grow exponentially within jitter bounds and stop at the cap")
    func backOff() {
        let schedule = RetrySchedule(initialDelay: .seconds(1), maximumDelay: .seconds(60), maximumAttempts: 20)
        var random = SystemRandomNumberGenerator()
        for attempt in 1...10 {
            let next = schedule.nextAttempt(after: attempt, now: now, expiresAt: now + 3600, perishable: false, serviceDelay: nil, random: &random)!
            let delay = next.timeIntervalSince(now)
            let ceiling = min(60.0, pow(2.0, Double(attempt - 1)))
            #expect(delay >= ceiling / 2 && delay <= ceiling, "attempt \(attempt): \(delay)")
        }
    }

    @Test("never past the expiry, never for perishable, never beyond the attempt limit")
    func limits() {
        let schedule = RetrySchedule(maximumAttempts: 3)
        var random = SeededRandom(seed: 1)
        #expect(schedule.nextAttempt(after: 1, now: now, expiresAt: now + 0.5, perishable: false, serviceDelay: nil, random: &random) == nil)
        #expect(schedule.nextAttempt(after: 1, now: now, expiresAt: now + 3600, perishable: true, serviceDelay: nil, random: &random) == nil)
        #expect(schedule.nextAttempt(after: 3, now: now, expiresAt: now + 3600, perishable: false, serviceDelay: nil, random: &random) == nil)
        #expect(schedule.nextAttempt(after: 2, now: now, expiresAt: now + 3600, perishable: false, serviceDelay: nil, random: &random) != nil)
    }

    @Test("Retry-After from the service wins over a shorter back-off")
    func serviceDelay() {
        var random = SeededRandom(seed: 2)
        let next = RetrySchedule().nextAttempt(after: 1, now: now, expiresAt: now + 3600, perishable: false, serviceDelay: .seconds(30), random: &random)
        #expect(next == now + 30)
    }
}

@Suite("Token refresh policies", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct TokenPolicyTests {
    let issued = Date(timeIntervalSince1970: 1_000_000)

    @Test("the provider token is reused for 50 minutes, then replaced")
    func providerToken() {
        var schedule = ProviderTokenSchedule()
        #expect(schedule.signingNeeded(now: issued) == .first)
        schedule.signed("a", at: issued, reason: .first)
        #expect(schedule.signingNeeded(now: issued + 49 * 60) == nil)
        #expect(schedule.signingNeeded(now: issued + 50 * 60) == .refresh)
        #expect(schedule.signingNeeded(now: issued - 10) == .refresh)
    }

    @Test("a refused token is replaced at once, then not more often than once a minute")
    func rejection() {
        var schedule = ProviderTokenSchedule()
        schedule.signed("a", at: issued, reason: .first)
        // A five-second-old token refused as expired: the next push carries a new one.
        let replaced = schedule.rejected("a", now: issued + 5)
        #expect(replaced)
        #expect(schedule.signingNeeded(now: issued + 5) == .rejected)
        schedule.signed("b", at: issued + 5, reason: .rejected)
        // An answer about the old token, arriving late, changes nothing.
        let lateAnswer = schedule.rejected("a", now: issued + 6)
        #expect(!lateAnswer)
        #expect(schedule.signingNeeded(now: issued + 6) == nil)
        // The new one refused too (a wrong key): kept for a minute, then replaced.
        let withinAMinute = schedule.rejected("b", now: issued + 30)
        #expect(!withinAMinute)
        #expect(schedule.signingNeeded(now: issued + 30) == nil)
        let aMinuteLater = schedule.rejected("b", now: issued + 65)
        #expect(aMinuteLater)
        #expect(schedule.signingNeeded(now: issued + 65) == .rejected)
    }

    @Test("TooManyProviderTokenUpdates: back to the previous token, no signing during a back-off that doubles")
    func throttled() throws {
        var schedule = ProviderTokenSchedule(policy: ProviderTokenPolicy(refreshAge: 5 * 60))
        schedule.signed("a", at: issued, reason: .first)
        schedule.signed("b", at: issued + 360, reason: .refresh)
        let throttledUntil = schedule.throttled("b", now: issued + 361)
        let until = try #require(throttledUntil)
        #expect(until == issued + 421)
        #expect(schedule.current?.token == "a")
        // The other in-flight answers about b change nothing; a (6 minutes old) is reused
        // although past its refresh age.
        let inFlight = schedule.throttled("b", now: issued + 362)
        #expect(inFlight == nil)
        #expect(schedule.signingNeeded(now: issued + 400) == nil)
        let whilePaused = schedule.rejected("a", now: issued + 400)
        #expect(!whilePaused, "no new token while paused")
        #expect(schedule.signingNeeded(now: issued + 421) == .refresh)
        schedule.signed("c", at: issued + 421, reason: .refresh)
        let secondBackoff = schedule.throttled("c", now: issued + 422)
        #expect(secondBackoff == issued + 422 + 120)
        schedule.accepted()
        #expect(schedule.signingNeeded(now: issued + 542) == .refresh)
        schedule.signed("d", at: issued + 542, reason: .refresh)
        let afterAccepted = schedule.throttled("d", now: issued + 543)
        #expect(afterAccepted == issued + 543 + 60, "an accepted push resets the back-off")
    }

    @Test("near its hour a token is replaced even while signing is paused")
    func pausedNearTheHour() {
        var schedule = ProviderTokenSchedule(policy: ProviderTokenPolicy(refreshAge: 5 * 60, throttleBackoff: 3_600, maximumThrottleBackoff: 3_600))
        schedule.signed("a", at: issued, reason: .first)
        schedule.signed("b", at: issued + 360, reason: .refresh)
        _ = schedule.throttled("b", now: issued + 361)
        #expect(schedule.signingNeeded(now: issued + 55 * 60 - 1) == nil)
        #expect(schedule.signingNeeded(now: issued + 55 * 60) == .refresh)
    }

    @Test("the FCM access token is refreshed five minutes before it expires")
    func accessToken() {
        let policy = AccessTokenPolicy()
        let expiry = issued + 3600
        #expect(!policy.needsRefresh(expiresAt: expiry, now: issued + 3000))
        #expect(policy.needsRefresh(expiresAt: expiry, now: issued + 3300))
        #expect(policy.needsRefresh(expiresAt: nil, now: issued))
    }
}

@Suite("Request building", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct RequestBuilderTests {
    let expiry = Date(timeIntervalSince1970: 1_700_000_300)
    var message: PushMessage {
        PushMessage(notificationId: "pay-1", text: "Код: 4242", badge: 1, sound: nil, data: ["type": "PIN_CODE", "target": "4242"], urgency: .high, expiresAt: expiry)
    }

    @Test("APNs headers and payload")
    func apns() throws {
        let id = UUID(uuidString: "6E4C2E1A-7C1B-4C39-9A8F-0F8E2B9D0A11")!
        let request = try APNsRequestBuilder(topic: "com.bank.app").request(for: message, deviceToken: "ab12", apnsId: id)
        #expect(request.path == "/3/device/ab12")
        #expect(request.headers["apns-topic"] == "com.bank.app")
        #expect(request.headers["apns-priority"] == "10")
        #expect(request.headers["apns-push-type"] == "alert")
        #expect(request.headers["apns-expiration"] == "1700000300")
        #expect(request.headers["apns-collapse-id"] == "pay-1")
        #expect(request.headers["apns-id"] == "6e4c2e1a-7c1b-4c39-9a8f-0f8e2b9d0a11")
        let payload = try JSONSerialization.jsonObject(with: request.body) as! [String: Any]
        let aps = payload["aps"] as! [String: Any]
        #expect(aps["alert"] as? String == "Код: 4242")
        #expect(aps["badge"] as? Int == 1)
        #expect(aps["sound"] as? String == "default")
        #expect(payload["type"] as? String == "PIN_CODE")
        #expect(payload["target"] as? String == "4242")
        #expect(payload["notificationId"] as? String == "pay-1")
        var normal = message
        normal.urgency = .normal
        normal.notificationId = String(repeating: "x", count: 65)
        let second = try APNsRequestBuilder(topic: nil).request(for: normal, deviceToken: "ab", apnsId: id)
        #expect(second.headers["apns-priority"] == "5")
        // An id over APNs' 64 bytes collapses under its beginning and a hash of the whole id.
        let collapse = try #require(second.headers["apns-collapse-id"])
        #expect(collapse.utf8.count <= 64 && collapse.hasPrefix("xxxxxxxx"))
        normal.notificationId = String(repeating: "x", count: 64) + "y"
        #expect(try APNsRequestBuilder(topic: nil).request(for: normal, deviceToken: "ab", apnsId: id).headers["apns-collapse-id"] != collapse)
        #expect(second.headers["apns-topic"] == nil)
        #expect(aps["interruption-level"] == nil)
    }

    @Test("interruption level and collapse identifiers on every platform (CONTRACT §9)")
    func interruptionAndCollapse() throws {
        var alert = message
        alert.interruptionLevel = "time-sensitive"
        let apns = try APNsRequestBuilder(topic: "com.bank.app").request(for: alert, deviceToken: "ab", apnsId: UUID())
        let aps = try #require((try JSONSerialization.jsonObject(with: apns.body) as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["interruption-level"] as? String == "time-sensitive")
        var sealed = alert
        sealed.confidential = .fetch
        let confidential = try APNsRequestBuilder(topic: "com.bank.app").request(for: sealed, deviceToken: "ab", apnsId: UUID())
        let sealedAps = try #require((try JSONSerialization.jsonObject(with: confidential.body) as? [String: Any])?["aps"] as? [String: Any])
        #expect(sealedAps["interruption-level"] as? String == "time-sensitive")
        #expect(confidential.headers["apns-collapse-id"] == "pay-1")

        let fcm = try FCMRequestBuilder(projectId: "p").request(for: alert, registrationToken: "t", now: expiry.addingTimeInterval(-60))
        let fcmAndroid = try #require(((try JSONSerialization.jsonObject(with: fcm.body) as? [String: Any])?["message"] as? [String: Any])?["android"] as? [String: Any])
        #expect((fcmAndroid["notification"] as? [String: Any])?["tag"] as? String == "pay-1")

        let huawei = try HuaweiRequestBuilder(appId: "1").prepare(alert, now: expiry.addingTimeInterval(-60)).body(registrationToken: "t")
        let huaweiAndroid = try #require(((try JSONSerialization.jsonObject(with: huawei) as? [String: Any])?["message"] as? [String: Any])?["android"] as? [String: Any])
        #expect((huaweiAndroid["notification"] as? [String: Any])?["tag"] as? String == "pay-1")
    }

    @Test("oversized payloads fail before sending")
    func tooLarge() {
        var big = message
        big.text = String(repeating: "я", count: 3000)
        #expect(throws: PushMessageError.self) { try APNsRequestBuilder(topic: nil).payload(for: big) }
        #expect(throws: PushMessageError.self) { try FCMRequestBuilder(projectId: "p").request(for: big, registrationToken: "t", now: expiry - 300) }
    }

    @Test("FCM message shape: notification, string data, ttl and priority")
    func fcm() throws {
        let request = try FCMRequestBuilder(projectId: "bank-prod").request(for: message, registrationToken: "tok:en", now: expiry - 300)
        #expect(request.path == "/v1/projects/bank-prod/messages:send")
        let root = try JSONSerialization.jsonObject(with: request.body) as! [String: Any]
        let body = root["message"] as! [String: Any]
        #expect(body["token"] as? String == "tok:en")
        #expect((body["notification"] as? [String: Any])?["body"] as? String == "Код: 4242")
        #expect(body["data"] as? [String: String] == ["type": "PIN_CODE", "target": "4242", "notificationId": "pay-1"])
        let android = body["android"] as! [String: Any]
        #expect(android["ttl"] as? String == "300s")
        #expect(android["priority"] as? String == "HIGH")
    }

    @Test("a message prepared once gives each device the body it would get alone, its token escaped")
    func prepared() throws {
        let builder = FCMRequestBuilder(projectId: "bank-prod")
        let prepared = try builder.prepare(message, now: expiry - 300)
        for token in ["tok:en", #"a"b\c"#, "ж"] {
            let body = prepared.body(registrationToken: token)
            #expect(body == (try builder.request(for: message, registrationToken: token, now: expiry - 300)).body)
            let root = try JSONSerialization.jsonObject(with: body) as! [String: Any]
            #expect((root["message"] as? [String: Any])?["token"] as? String == token)
        }
        let apns = try APNsRequestBuilder(topic: "com.bank.app").prepare(message)
        #expect(apns.headers["apns-id"] == nil)
        #expect(apns.path(deviceToken: "ab12") == "/3/device/ab12")
        #expect(apns.body == (try APNsRequestBuilder(topic: nil).payload(for: message)))
    }
}
