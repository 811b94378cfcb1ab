import Foundation

/// Builds RuStore push `messages:send` requests. RuStore takes FCM HTTP v1's shape, one token
/// per request: a notification (the text), data (every value a string) and Android `ttl`; only
/// the fields RuStore documents are sent (no FCM collapse key or priority).
package struct RuStoreRequestBuilder: Sendable {
    /// What reaches the device (notification and data) at most, as for FCM.
    package static let maximumPayloadBytes = 4096

    package var projectId: String

    package init(projectId: String) {
        self.projectId = projectId
    }

    /// What every device's request for `message` shares, built once per notification; the
    /// body is written around the token's place.
    package func prepare(_ message: PushMessage, now: Date) throws(PushMessageError) -> FCMPreparedMessage {
        let ttl = max(0, Int64(message.expiresAt.timeIntervalSince(now).rounded(.down)))
        if let data = message.confidentialData {
            // CONTRACT §8: data only (no notification, which RuStore would show). RuStore
            // documents no priority: its data messages are delivered as they come.
            let delivered = JSONValue.object([("data", .object(data))]).encoded
            guard delivered.count <= Self.maximumPayloadBytes else {
                throw .payloadTooLarge(bytes: delivered.count, limit: Self.maximumPayloadBytes)
            }
            return FCMPreparedMessage(path: "/v1/projects/\(projectId)/messages:send", message: [
                ("android", .object([("ttl", .string("\(ttl)s"))])),
                ("data", .object(data)),
            ])
        }
        let data = message.dataMembers
        let notification: [(String, JSONValue)] = [("body", .string(message.text))]
        let delivered = JSONValue.object([("notification", .object(notification)), ("data", .object(data))]).encoded
        guard delivered.count <= Self.maximumPayloadBytes else {
            throw .payloadTooLarge(bytes: delivered.count, limit: Self.maximumPayloadBytes)
        }
        return FCMPreparedMessage(path: "/v1/projects/\(projectId)/messages:send", message: [
            ("android", .object([("notification", .object(notification)), ("ttl", .string("\(ttl)s"))])),
            ("data", .object(data)),
            ("notification", .object(notification)),
        ])
    }
}
