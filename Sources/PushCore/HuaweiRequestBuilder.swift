import Foundation

/// Builds Huawei Push Kit `messages:send` requests (API v1): one token per request, given as
/// Huawei's token list, so that each device has its own answer; a notification message whose
/// text opens the app (`click_action` type 3), the data as Huawei's one string (a JSON object),
/// `android.urgency` from the priority and `android.ttl` from the timeout.
package struct HuaweiRequestBuilder: Sendable {
    /// Huawei's limit for a message (4 KB).
    package static let maximumPayloadBytes = 4096

    /// The app's id in AppGallery Connect (`hmsAppId`), part of the path.
    package var appId: String
    /// `android.category` by notification type (Huawei's message classification).
    package var categories: HuaweiCategories

    package init(appId: String, categories: HuaweiCategories = HuaweiCategories()) {
        self.appId = appId
        self.categories = categories
    }

    /// What every device's request for `message` shares, built once per notification; the
    /// body is written around the token's place.
    package func prepare(_ message: PushMessage, now: Date) throws(PushMessageError) -> FCMPreparedMessage {
        let ttl = max(0, Int64(message.expiresAt.timeIntervalSince(now).rounded(.down)))
        let prepared: FCMPreparedMessage
        if let data = message.confidentialData {
            // CONTRACT §8: a data message (no notification, which Huawei would show), high urgency.
            prepared = FCMPreparedMessage(path: "/v1/\(appId)/messages:send", before: [("validate_only", .bool(false))], message: [
                ("android", .object([("ttl", .string("\(ttl)s")), ("urgency", .string("HIGH"))])),
                ("data", .string(String(decoding: JSONValue.object(data).encoded, as: UTF8.self))),
            ], tokenList: true)
        } else {
            let dataString = String(decoding: JSONValue.object(message.dataMembers).encoded, as: UTF8.self)
            var android: [(String, JSONValue)] = [
                ("notification", .object([("body", .string(message.text)), ("click_action", .object([("type", .int(3))])),
                                          ("tag", .string(message.collapseIdentifier))])),
                ("ttl", .string("\(ttl)s")),
                ("urgency", .string(message.urgency == .high ? "HIGH" : "NORMAL")),
            ]
            // A notification the bank classified (self-classification): e.g. a code as ACCOUNT,
            // not as marketing that Huawei caps a device a day. (A confidential one is a data
            // message above: the app shows it, Huawei does not classify it.)
            if let category = categories.category(forType: message.data["type"]) { android.append(("category", .string(category))) }
            prepared = FCMPreparedMessage(path: "/v1/\(appId)/messages:send", before: [("validate_only", .bool(false))], message: [
                ("android", .object(android)),
                ("data", .string(dataString)),
                ("notification", .object([("body", .string(message.text))])),
            ], tokenList: true)
        }
        // Huawei's limit is for the message without its token.
        guard prepared.bodyPrefix.count <= Self.maximumPayloadBytes else {
            throw .payloadTooLarge(bytes: prepared.bodyPrefix.count, limit: Self.maximumPayloadBytes)
        }
        return prepared
    }
}
