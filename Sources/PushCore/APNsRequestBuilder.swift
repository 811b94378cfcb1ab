import Foundation

/// Builds APNs requests: `POST /3/device/<token>` with the headers Apple documents and a JSON
/// payload of `aps` (alert, badge, sound) plus the message's custom keys.
package struct APNsRequestBuilder: Sendable {
    /// Apple's limit for regular remote notifications.
    package static let maximumPayloadBytes = 4096
    /// Apple's limit for `apns-collapse-id`.
    package static let maximumCollapseIdBytes = 64

    package var topic: String?

    package init(topic: String?) {
        self.topic = topic
    }

    /// The request for `message` to `deviceToken`; `apnsId` (a UUID) names this attempt.
    package func request(for message: PushMessage, deviceToken: String, apnsId: UUID) throws(PushMessageError) -> PushRequest {
        let prepared = try prepare(message)
        var headers = prepared.headers
        headers["apns-id"] = apnsId.uuidString.lowercased()
        return PushRequest(path: prepared.path(deviceToken: deviceToken), headers: headers, body: prepared.body)
    }

    /// What every device's request for `message` shares — headers but the attempt's id, and the
    /// payload — built once per notification rather than once per device.
    package func prepare(_ message: PushMessage) throws(PushMessageError) -> APNsPreparedMessage {
        let body = try payload(for: message)
        var headers = [
            "apns-push-type": "alert",
            "apns-priority": message.urgency == .high ? "10" : "5",
            "apns-expiration": String(Int64(message.expiresAt.timeIntervalSince1970.rounded(.up))),
            "content-type": "application/json",
        ]
        if let topic { headers["apns-topic"] = topic }
        // A retried duplicate replaces the first copy on the device instead of stacking.
        headers["apns-collapse-id"] = message.collapseIdentifier
        return APNsPreparedMessage(headers: headers, body: body)
    }

    /// A Wallet pass update push (CONTRACT §7): an empty JSON object on the pass type's topic,
    /// as Apple specifies for passes; Wallet then asks the web service what changed.
    package static func passUpdate(passTypeIdentifier: String) -> APNsPreparedMessage {
        APNsPreparedMessage(headers: ["apns-topic": passTypeIdentifier, "content-type": "application/json"], body: Data("{}".utf8))
    }

    /// The JSON payload; throws when it exceeds 4 KB.
    package func payload(for message: PushMessage) throws(PushMessageError) -> Data {
        if let confidential = message.confidentialMembers {
            // CONTRACT §8: the neutral alert, for the notification service extension to replace.
            let aps: [(String, JSONValue)] = [
                ("alert", .object([("body", .string(message.text))])), ("mutable-content", .int(1)), ("sound", .string("default")),
            ] + Self.interruptionLevel(message)
            return try Self.checked(JSONValue.object([("aps", .object(aps))] + confidential).encoded)
        }
        var aps: [(String, JSONValue)] = [("alert", .string(message.text))]
        if let badge = message.badge { aps.append(("badge", .int(badge))) }
        aps.append(("sound", .string(message.sound ?? "default")))
        aps += Self.interruptionLevel(message)
        var root: [(String, JSONValue)] = [("aps", .object(aps))]
        for (key, value) in message.data.sorted(by: { $0.key < $1.key }) where key != "aps" && key != "notificationId" {
            root.append((key, .string(value)))
        }
        root.append(("notificationId", .string(message.notificationId)))
        return try Self.checked(JSONValue.object(root).encoded)
    }

    private static func interruptionLevel(_ message: PushMessage) -> [(String, JSONValue)] {
        message.interruptionLevel.map { [("interruption-level", .string($0))] } ?? []
    }

    private static func checked(_ payload: Data) throws(PushMessageError) -> Data {
        guard payload.count <= maximumPayloadBytes else {
            throw .payloadTooLarge(bytes: payload.count, limit: maximumPayloadBytes)
        }
        return payload
    }
}

/// An APNs request without its device: the shared headers (no `apns-id`) and payload of one
/// message, built once and used for every device it goes to.
package struct APNsPreparedMessage: Sendable, Equatable {
    package var headers: [String: String] {
        didSet { headerLines = Self.lines(headers) }
    }
    /// ``headers`` as `name: value` lines, formatted once for every device's request.
    package private(set) var headerLines: [String]
    package var body: Data

    package init(headers: [String: String], body: Data) {
        self.headers = headers
        self.headerLines = Self.lines(headers)
        self.body = body
    }

    static func lines(_ headers: [String: String]) -> [String] {
        headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
    }

    /// The request path for one device token.
    package func path(deviceToken: String) -> String { "/3/device/\(deviceToken)" }
}
