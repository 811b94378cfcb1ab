import Foundation

/// What one Live Activity event carries (CONTRACT §9), as the bank sent it: the content state
/// and attributes are JSON object texts checked at the edge.
package struct ActivityContent: Sendable, Equatable {
    package var contentState: String?
    package var alertTitle: String?
    package var alertBody: String?
    /// Seconds since 1970.
    package var staleDate: Int64?
    package var dismissalDate: Int64?
    package var relevanceScore: Double?
    /// `apns-priority` asked for (5 or 10); `nil`: 10 with an alert, else 5.
    package var priority: Int?

    package init(contentState: String? = nil, alertTitle: String? = nil, alertBody: String? = nil, staleDate: Int64? = nil,
                dismissalDate: Int64? = nil, relevanceScore: Double? = nil, priority: Int? = nil) {
        self.contentState = contentState
        self.alertTitle = alertTitle
        self.alertBody = alertBody
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.priority = priority
    }
}

/// What a queued push of an activity or widget does.
package enum ActivityPushKind: String, Sendable, CaseIterable {
    case start, update, end
    /// A widget refresh (not tied to an activity).
    case widgets
    /// A controls refresh (iOS 18 Control Center and Lock Screen controls; iPhones only).
    case controls

    /// A widget or controls refresh: tied to no activity, to the device's own push token, never stale.
    package var isRefresh: Bool { self == .widgets || self == .controls }
}

/// Where an activity stands for one recipient (getActivityStatus).
package enum ActivityRecipientState: String, Sendable, CaseIterable {
    /// The start went (or goes) to a push-to-start token; the phone has not sent an update token yet.
    case starting = "STARTING"
    case running = "RUNNING"
    case ended = "ENDED"
    /// The recipient has no device that can start this activity (no push-to-start token for its
    /// type on an iPhone, no Android device).
    case noToken = "NO_TOKEN"
}

/// A start, update or end the bank asked for: the event's content and the activity it belongs to.
package struct ActivityStart: Sendable, Equatable {
    package var activityId: String
    package var activityType: String
    package var recipients: [String]
    /// A JSON object text.
    package var attributes: String
    package var content: ActivityContent

    package init(activityId: String, activityType: String, recipients: [String], attributes: String, content: ActivityContent) {
        self.activityId = activityId
        self.activityType = activityType
        self.recipients = recipients
        self.attributes = attributes
        self.content = content
    }
}

/// A queued activity or widget push, claimed under a lease, with what it goes to.
package struct ClaimedActivityPush: Sendable, Equatable {
    /// `""` for a widget refresh.
    package var activityId: String
    package var activityType: String
    package var kind: ActivityPushKind
    package var timestamp: Int64
    package var content: ActivityContent
    /// The start's attributes (a JSON object text).
    package var attributes: String?
    package var device: Device
    /// The token this push goes to: the push-to-start token (start), the activity's update
    /// token (update, end), the device's push token (widgets, and every Android push).
    package var token: String
    /// The newest timestamp already pushed to the device for this activity.
    package var lastSentTimestamp: Int64
    package var attempts: Int

    package init(activityId: String, activityType: String, kind: ActivityPushKind, timestamp: Int64, content: ActivityContent,
                attributes: String?, device: Device, token: String, lastSentTimestamp: Int64, attempts: Int) {
        self.activityId = activityId
        self.activityType = activityType
        self.kind = kind
        self.timestamp = timestamp
        self.content = content
        self.attributes = attributes
        self.device = device
        self.token = token
        self.lastSentTimestamp = lastSentTimestamp
        self.attempts = attempts
    }

    /// True when the push would not be newer than what the device already has: dropped, never
    /// sent out of order.
    package var isStale: Bool { !kind.isRefresh && timestamp <= lastSentTimestamp }
}

/// What became of a claimed activity push.
package struct ActivityPushResult: Sendable {
    package enum Change: Sendable, Equatable {
        case sent
        /// Not newer than the last event pushed to the device.
        case dropped
        case retry(at: Date, error: String)
        case failed(error: String)
        /// The service declared the token dead: only that token is removed.
        case tokenDead(reason: String)
    }

    package var claim: ClaimedActivityPush
    package var change: Change

    package init(claim: ClaimedActivityPush, change: Change) {
        self.claim = claim
        self.change = change
    }
}

/// Checks of the bank's Live Activity fields that every layer agrees on.
package enum ActivityFields {
    /// Activity ids, activity types and channel ids: 1–128 of `A-Z a-z 0-9 . _ : -`.
    package static let maximumIdentifierLength = 128
    /// A content state or attributes object.
    package static let maximumJSONBytes = 4096

    /// Why `value` is not an identifier, or `nil`.
    package static func identifierProblem(_ value: String, name: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= maximumIdentifierLength else {
            return "\(name) must be 1–\(maximumIdentifierLength) characters, got \(value.utf8.count)"
        }
        guard value.utf8.allSatisfy(isIdentifierByte) else {
            return "\(name) may hold only letters, digits and . _ : -"
        }
        return nil
    }

    /// Why `value` is not a broadcast channel id (Apple's are base64: 1–128 of `A-Z a-z 0-9 + / = - _`), or `nil`.
    /// The most activity types one device keeps push-to-start tokens for: an app has a handful
    /// of attributes types, and the store must not grow with whatever a phone sends.
    package static let maximumStartTokensPerDevice = 64

    package static func channelIdProblem(_ value: String, name: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= maximumIdentifierLength else {
            return "\(name) must be 1–\(maximumIdentifierLength) characters, got \(value.utf8.count)"
        }
        guard value.utf8.allSatisfy({ isIdentifierByte($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "=") }) else {
            return "\(name) may hold only the characters of base64 (letters, digits, + / = - _)"
        }
        return nil
    }

    /// Why `text` is not a JSON object within the limit, or `nil`.
    package static func objectProblem(_ text: String, name: String) -> String? {
        guard text.utf8.count <= maximumJSONBytes else {
            return "\(name) is at most \(maximumJSONBytes) bytes of JSON, got \(text.utf8.count)"
        }
        guard let data = text.data(using: .utf8),
              (try? JSONSerialization.jsonObject(with: data, options: [])) is [String: Any]
        else {
            return "\(name) must be a JSON object text, like {\"progress\": 0.5}"
        }
        return nil
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-")
    }
}
