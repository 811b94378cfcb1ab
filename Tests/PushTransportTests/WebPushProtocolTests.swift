import Foundation
import PigeonDomain
import PigeonCrypto
import PigeonTestSupport
import PushCore
import PushTransport
import Testing

@Suite("Web Push subscriptions, answers and VAPID", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct WebPushProtocolTests {
    static let point = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"

    static func object(endpoint: String = "https://fcm.googleapis.com/fcm/send/abc", p256dh: String = point, auth: String = "BTBZMqHH6r4Tts7J_aSIgg") -> [String: Any] {
        ["endpoint": endpoint, "keys": ["p256dh": p256dh, "auth": auth]]
    }

    @Test("a subscription is read from the browser's object, stored canonically and read back; bad shapes are refused")
    func subscription() throws {
        let parsed = try WebPushSubscription(json: Self.object())
        #expect(parsed.host == "fcm.googleapis.com" && parsed.origin == "https://fcm.googleapis.com")
        #expect(WebPushSubscription(stored: parsed.storedForm) == parsed)
        #expect(parsed.storedForm == #"{"endpoint":"https://fcm.googleapis.com/fcm/send/abc","keys":{"auth":"BTBZMqHH6r4Tts7J_aSIgg","p256dh":"\#(Self.point)"}}"#)
        #expect(try WebPushSubscription(json: Self.object(endpoint: "https://127.0.0.1:8443/webpush/x")).origin == "https://127.0.0.1:8443")
        for bad in [Self.object(endpoint: "http://fcm.googleapis.com/x"), Self.object(endpoint: "https://user:pw@fcm.googleapis.com/x"),
                    Self.object(endpoint: "https://fcm.googleapis.com/" + String(repeating: "a", count: 2100)),
                    Self.object(p256dh: "AAAA"), Self.object(auth: "short"), Self.object(auth: "not base64url!!!!!!!"), ["endpoint": "https://x"]] {
            #expect(throws: WebPushSubscriptionError.self) { try WebPushSubscription(json: bad) }
        }
        #expect(throws: WebPushSubscriptionError.self) { try WebPushSubscription(json: "a string") }
    }

    @Test("allowed hosts: exact names, and *.domain for the hosts below it only")
    func hosts() throws {
        let hosts = WebPushHosts(list: "fcm.googleapis.com, *.notify.windows.com,  *.push.services.mozilla.com, 127.0.0.1:2197")
        #expect(hosts.allows(host: "fcm.googleapis.com", port: nil) && hosts.allows(host: "FCM.googleapis.com", port: 443))
        #expect(hosts.allows(host: "wns2-db5p.notify.windows.com", port: nil))
        #expect(!hosts.allows(host: "notify.windows.com", port: nil))
        #expect(!hosts.allows(host: "evilnotify.windows.com", port: nil))
        #expect(!hosts.allows(host: "fcm.googleapis.com.evil.example", port: nil))
        #expect(!hosts.allows(host: "169.254.169.254", port: nil))
        #expect(!WebPushHosts(patterns: []).allows(host: "fcm.googleapis.com", port: nil))
        // A pattern never opens every port of its host.
        #expect(!hosts.allows(host: "fcm.googleapis.com", port: 8443))
        #expect(hosts.allows(host: "127.0.0.1", port: 2197))
        #expect(!hosts.allows(host: "127.0.0.1", port: 5432) && !hosts.allows(host: "127.0.0.1", port: nil))
        let simulator = try WebPushSubscription(json: Self.object(endpoint: "https://127.0.0.1:2197/webpush/x"))
        let otherPort = try WebPushSubscription(json: Self.object(endpoint: "https://fcm.googleapis.com:22/x"))
        #expect(hosts.allows(simulator) && !hosts.allows(otherPort))
    }

    @Test("answers: 201 accepted, 404/410 gone, 413 not retried, 429 after Retry-After, 5xx retried, 403 failed", arguments: [
        (201, nil as String?, PushOutcome.accepted(id: nil)),
        (410, nil, .tokenDead(reason: "HTTP 410 subscription gone", since: nil)),
        (404, nil, .tokenDead(reason: "HTTP 404 subscription gone", since: nil)),
        (413, nil, .failed(reason: "HTTP 413 payload too large")),
        (429, "3", .retry(reason: "HTTP 429", after: .seconds(3), cause: .throttled)),
        (503, nil, .retry(reason: "HTTP 503", after: nil)),
        (403, nil, .failed(reason: "HTTP 403 VAPID refused")),
        (400, nil, .failed(reason: "HTTP 400")),
    ])
    func answers(status: Int, retryAfter: String?, expected: PushOutcome) {
        #expect(WebPushResponse.classify(status: status, retryAfter: retryAfter) == expected)
    }

    @Test("headers: urgency from the priority, a topic of at most 32 base64url characters, the notification as JSON")
    func headers() throws {
        let message = PushMessage(notificationId: "pin/2026-12-02#1 with spaces and more than thirty-two", text: "Код", badge: 2,
                                  data: ["type": "PIN_CODE"], urgency: .high, expiresAt: Date())
        #expect(WebPushResponse.urgency(message) == "high")
        let topic = WebPushResponse.topic(notificationId: message.notificationId)
        #expect(topic.count <= 32 && topic.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        let payload = try #require(try JSONSerialization.jsonObject(with: WebPushResponse.plaintext(message)) as? [String: Any])
        #expect(payload["notificationId"] as? String == message.notificationId)
        #expect(payload["text"] as? String == "Код")
        #expect((payload["data"] as? [String: String])?["type"] == "PIN_CODE")
    }

    @Test("VAPID: an ES256 token for the origin, expiring within 24 hours, with the contact, signed by the key in k; reused per origin", .enabled(if: TestTier.runsIntegration, "integration tier (runs openssl): PIGEON_TEST_TIER"))
    func vapid() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("vapid-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyPath = folder.appendingPathComponent("vapid.pem").path
        _ = try ChildProcess.runBlocking("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", keyPath])
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let signer = try VAPIDSigner(key: PrivateKey(pem: String(contentsOfFile: keyPath, encoding: .utf8)), subject: "mailto:ops@bank.example",
                                     clock: { now })
        let header = try signer.authorization(origin: "https://fcm.googleapis.com")
        #expect(try signer.authorization(origin: "https://fcm.googleapis.com") == header)
        #expect(try signer.authorization(origin: "https://updates.push.services.mozilla.com") != header)
        let parts = header.dropFirst("vapid ".count).components(separatedBy: ", ")
        let tokenField = try #require(parts.first { $0.hasPrefix("t=") })
        let keyField = try #require(parts.first { $0.hasPrefix("k=") })
        let token = String(tokenField.dropFirst(2))
        let k = try #require(Base64URL.decode(String(keyField.dropFirst(2))))
        #expect(Base64URL.encode(k) == signer.applicationServerKey)
        let verified = try #require(JSONWebToken.verify(token, key: PublicKey(p256Point: k)))
        #expect(verified.signatureValid)
        #expect(verified.header["alg"] as? String == "ES256" && verified.header["typ"] as? String == "JWT")
        #expect(verified.claims["aud"] as? String == "https://fcm.googleapis.com")
        #expect(verified.claims["sub"] as? String == "mailto:ops@bank.example")
        let expiry = try #require((verified.claims["exp"] as? NSNumber)?.doubleValue)
        #expect(expiry > now.timeIntervalSince1970 && expiry <= now.timeIntervalSince1970 + 24 * 3600)
    }
}
