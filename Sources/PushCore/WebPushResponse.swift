import Foundation

/// Turns a push service's answer to a Web Push message (RFC 8030) into a ``PushOutcome``:
/// 201 (or 200/202) accepted; 404 and 410 — the subscription is gone (removed); 413 — too big
/// (never retried); 429 — retried, not before `Retry-After`; 5xx — retried; 400/401/403 — the
/// request or our VAPID key was refused (failed: a subscription made for another application
/// server key never takes ours).
package enum WebPushResponse {
    package static func classify(status: Int, retryAfter: String? = nil, now: Date = Date()) -> PushOutcome {
        switch status {
        case 200, 201, 202:
            return .accepted(id: nil)
        case 404, 410:
            return .tokenDead(reason: "HTTP \(status) subscription gone", since: nil)
        case 413:
            return .failed(reason: "HTTP 413 payload too large")
        case 429:
            return .retry(reason: "HTTP 429", after: RetryAfter.parse(retryAfter, now: now), cause: .throttled)
        case 500...599:
            return .retry(reason: "HTTP \(status)", after: RetryAfter.parse(retryAfter, now: now), cause: .unavailable)
        case 401, 403:
            return .failed(reason: "HTTP \(status) VAPID refused")
        default:
            return .failed(reason: "HTTP \(status)")
        }
    }

    /// The `Urgency` header (RFC 8030 §5.3) of a message: `high` for PIN codes and prioritised
    /// notifications, `normal` otherwise.
    package static func urgency(_ message: PushMessage) -> String {
        message.urgency == .high ? "high" : "normal"
    }

    /// The `Topic` header (RFC 8030 §5.4): at most 32 characters of the base64url alphabet, so
    /// a notification's repeats replace each other; derived from its id.
    package static func topic(notificationId: String) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let kept = notificationId.filter { allowed.contains($0) }
        return String((kept.isEmpty ? "notification" : kept).prefix(32))
    }

    /// What the browser's service worker receives: the notification as JSON.
    package static func plaintext(_ message: PushMessage) -> Data {
        JSONValue.object(members(message)).encoded
    }

    /// Safari's declarative Web Push (iOS/iPadOS 18.4, Safari 18.5): the same members for a
    /// service worker, and `web_push: 8030` with a `notification` the browser shows by itself —
    /// `title`, the text as `body`, `navigate` (the notification's target when it is an https URL,
    /// else `navigate`) and the badge as `app_badge`. A confidential one shows its neutral text,
    /// goes to its default page (never its target) and is `mutable`, so a service worker may
    /// decrypt it in place. Other browsers ignore the two members.
    package static func declarativePlaintext(_ message: PushMessage, title: String, navigate: String) -> Data {
        var notification: [(String, JSONValue)] = [("title", .string(title)), ("body", .string(message.text))]
        let target = message.confidential == nil ? message.data["target"] : nil
        let opens = target.flatMap { $0.lowercased().hasPrefix("https://") && $0.utf8.count <= 2_048 ? $0 : nil } ?? navigate
        notification.append(("navigate", .string(opens)))
        if let badge = message.badge { notification.append(("app_badge", .int(max(0, badge)))) }
        if message.confidential != nil { notification.append(("mutable", .bool(true))) }
        return JSONValue.object([("web_push", .int(8030)), ("notification", .object(notification))] + members(message)).encoded
    }

    /// The members a service worker reads.
    private static func members(_ message: PushMessage) -> [(String, JSONValue)] {
        if let confidential = message.confidentialMembers {
            // CONTRACT §8: the neutral alert for the service worker, and the APNs payload's members.
            return [("text", .string(message.text))] + confidential
        }
        var members: [(String, JSONValue)] = [("notificationId", .string(message.notificationId)), ("text", .string(message.text))]
        if let badge = message.badge { members.append(("badge", .int(badge))) }
        if let sound = message.sound { members.append(("sound", .string(sound))) }
        let data = message.dataMembers.dropLast()
        if !data.isEmpty { members.append(("data", .object(Array(data)))) }
        return members
    }
}
