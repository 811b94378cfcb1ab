import Foundation
import PigeonDomain
import PushCore
import Testing
@testable import PigeonDelivery
import PigeonTestSupport

/// How the engine plans a confidential notification's pushes: one sealed message per device
/// with a key, one shared `fetch` message for the others, never the content in clear.
@Suite("Confidential push plans", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConfidentialPlanTests {
    /// Seals by recording what it was given; refuses the key id "broken".
    final class RecordingSealer: ContentSealing, @unchecked Sendable {
        // @unchecked: written only from the test's own thread (PushPlan is synchronous).
        var sealed: [(content: String, keyId: String, notificationId: String)] = []
        struct Refused: Error {}
        func seal(_ content: Data, to key: DeviceEncryptionKey, notificationId: String) throws -> E2EEnvelope {
            guard key.keyId != "broken" else { throw Refused() }
            sealed.append((String(decoding: content, as: UTF8.self), key.keyId, notificationId))
            return E2EEnvelope(keyId: key.keyId, ephemeralPublicKey: Data([4]), salt: Data(), ciphertext: Data())
        }
    }

    static let key = DeviceEncryptionKey(keyId: "k1", publicKey: Data([4] + [UInt8](repeating: 9, count: 64)))

    @Test("keyed devices get their own sealed message, keyless ones and a key that fails share the fetch message; clear notifications are untouched")
    func plan() throws {
        let secret = PushNotification(id: "code-1", recipients: ["u"], timeoutSeconds: 60,
                                      pushContent: PushContent(text: "Code 123456", type: .pinCode, details: [KeyValue("target", "123456")]),
                                      details: [KeyValue("name", "ACME")], confidential: true)
        let clear = PushNotification(id: "news-1", recipients: ["u"], timeoutSeconds: 60, pushContent: PushContent(text: "Hello", type: .message))
        let devices = [
            Device(id: 1, bankClientId: "b", userId: "u", deviceId: "a", platform: .ios, pushToken: "t1", encryptionKey: Self.key),
            Device(id: 2, bankClientId: "b", userId: "u", deviceId: "b", platform: .android, pushToken: "t2", encryptionKey: Self.key),
            Device(id: 3, bankClientId: "b", userId: "u", deviceId: "c", platform: .ios, pushToken: "t3"),
            Device(id: 4, bankClientId: "b", userId: "u", deviceId: "d", platform: .huawei, pushToken: "t4",
                   encryptionKey: DeviceEncryptionKey(keyId: "broken", publicKey: Data())),
        ]
        let expires = Date(timeIntervalSince1970: 2_000_000_000)
        let claims = [ClaimedDelivery(notificationKey: 1, userId: "u", userFolded: "u", position: 1, attempt: 1, expiresAt: expires),
                      ClaimedDelivery(notificationKey: 2, userId: "u", userFolded: "u", position: 1, attempt: 1, expiresAt: expires)]
        let sealer = RecordingSealer()
        let plan = PushPlan(claims: claims, notifications: [1: secret, 2: clear], devices: ["u": devices], key: { $0 },
                            confidential: ConfidentialPushing(sealer: sealer, alertText: "Secure message"))
        let secretPushes = plan.pushes.filter { $0.claim == 0 }
        #expect(secretPushes.count == 4)
        let messages = secretPushes.map { plan.messages[$0.message] }
        #expect(messages.map(\.confidential?.label) == ["encrypted", "encrypted", "fetch", "fetch"])
        #expect(Set(secretPushes.map(\.message)).count == 3, "two sealed messages and one shared fetch message")
        for message in messages {
            #expect(message.text == "Secure message" && message.data.isEmpty && message.urgency == .high)
        }
        #expect(sealer.sealed.map(\.keyId) == ["k1", "k1"])
        #expect(sealer.sealed.allSatisfy { $0.notificationId == "code-1" })
        #expect(sealer.sealed[0].content == #"{"notificationId":"code-1","text":"Code 123456","type":"PIN_CODE","target":"123456","details":{"name":"ACME"}}"#)
        #expect(plan.sealingFailures.map(\.device.id) == [4])
        #expect(plan.confidentialCounts == [
            .init(service: "apns", mode: "encrypted"): 1, .init(service: "fcm", mode: "encrypted"): 1,
            .init(service: "apns", mode: "fetch"): 1, .init(service: "huawei", mode: "fetch"): 1,
        ])
        let clearMessages = Set(plan.pushes.filter { $0.claim == 1 }.map(\.message))
        #expect(clearMessages.count == 1)
        let news = try #require(clearMessages.first.map { plan.messages[$0] })
        #expect(news.text == "Hello" && news.confidential == nil)
    }

    @Test("without a sealer every device is told to fetch")
    func noSealer() {
        let secret = PushNotification(id: "code-2", recipients: ["u"], timeoutSeconds: 60, pushContent: PushContent(text: "Code 1", type: .pinCode), confidential: true)
        let plan = PushPlan(claims: [ClaimedDelivery(notificationKey: 1, userId: "u", userFolded: "u", position: 1, attempt: 1, expiresAt: Date())],
                            notifications: [1: secret],
                            devices: ["u": [Device(id: 1, bankClientId: "b", userId: "u", deviceId: "a", platform: .ios, pushToken: "t", encryptionKey: Self.key)]],
                            key: { $0 })
        #expect(plan.messages.map(\.confidential) == [.fetch])
        #expect(plan.messages.allSatisfy { !$0.text.contains("Code") })
    }
}
