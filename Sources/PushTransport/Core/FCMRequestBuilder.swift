import Foundation

/// Builds FCM HTTP v1 `messages:send` requests: a notification (the text), data (all values as
/// strings, as FCM requires), and Android `ttl` and `priority`.
public struct FCMRequestBuilder: Sendable {
    /// FCM's limit for a message's payload.
    public static let maximumPayloadBytes = 4096

    public var projectId: String

    public init(projectId: String) {
        self.projectId = projectId
    }

    public func request(for message: PushMessage, registrationToken: String, now: Date) throws(PushMessageError) -> PushRequest {
        var data = message.data
        data["notificationId"] = message.notificationId
        let ttl = max(0, Int64(message.expiresAt.timeIntervalSince(now).rounded(.down)))
        var notification: [String: Any] = ["body": message.text]
        if let sound = message.sound { notification["sound"] = sound }
        let android: [String: Any] = [
            "ttl": "\(ttl)s",
            "priority": message.urgency == .high ? "HIGH" : "NORMAL",
            "collapse_key": String(message.notificationId.prefix(64)),
            "notification": notification,
        ]
        let body: [String: Any] = [
            "message": [
                "token": registrationToken,
                "notification": ["body": message.text],
                "data": data,
                "android": android,
            ] as [String: Any]
        ]
        // FCM's limit covers what reaches the device: the notification and the data.
        let delivered = (try? JSONSerialization.data(withJSONObject: ["notification": notification, "data": data], options: [.withoutEscapingSlashes])) ?? Data()
        guard delivered.count <= Self.maximumPayloadBytes else {
            throw .payloadTooLarge(bytes: delivered.count, limit: Self.maximumPayloadBytes)
        }
        let encoded = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return PushRequest(
            path: "/v1/projects/\(projectId)/messages:send",
            headers: ["content-type": "application/json; charset=utf-8"],
            body: encoded)
    }
}
