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
        // FCM wants every data value as a string; keys sorted so a payload is reproducible.
        var data = message.data.filter { $0.key != "notificationId" }.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) }
        data.append(("notificationId", .string(message.notificationId)))
        let ttl = max(0, Int64(message.expiresAt.timeIntervalSince(now).rounded(.down)))
        var notification: [(String, JSONValue)] = [("body", .string(message.text))]
        if let sound = message.sound { notification.append(("sound", .string(sound))) }
        let android: [(String, JSONValue)] = [
            ("collapse_key", .string(String(message.notificationId.prefix(64)))),
            ("notification", .object(notification)),
            ("priority", .string(message.urgency == .high ? "HIGH" : "NORMAL")),
            ("ttl", .string("\(ttl)s")),
        ]
        let body = JSONValue.object([
            ("message", .object([
                ("android", .object(android)),
                ("data", .object(data)),
                ("notification", .object([("body", .string(message.text))])),
                ("token", .string(registrationToken)),
            ])),
        ])
        // FCM's limit covers what reaches the device: the notification and the data.
        let delivered = JSONValue.object([("notification", .object(notification)), ("data", .object(data))]).encoded
        guard delivered.count <= Self.maximumPayloadBytes else {
            throw .payloadTooLarge(bytes: delivered.count, limit: Self.maximumPayloadBytes)
        }
        let encoded = body.encoded
        return PushRequest(
            path: "/v1/projects/\(projectId)/messages:send",
            headers: ["content-type": "application/json; charset=utf-8"],
            body: encoded)
    }
}
