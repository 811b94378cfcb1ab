import Foundation

/// One Live Activity event as APNs carries it (CONTRACT §9): `aps.event`, `aps.timestamp`,
/// `content-state` and, by event, the start's attributes, the stale and dismissal dates and an
/// alert. JSON members the bank sent (content state, attributes) are checked JSON object texts.
package struct LiveActivityEvent: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        case start, update, end
    }

    package var kind: Kind
    /// Seconds since 1970, strictly increasing per activity.
    package var timestamp: Int64
    /// A JSON object text.
    package var contentState: String
    package var alertTitle: String?
    package var alertBody: String?
    package var staleDate: Int64?
    package var dismissalDate: Int64?
    /// The start's `attributes-type` and `attributes` (a JSON object text).
    package var attributesType: String?
    package var attributes: String?
    package var relevanceScore: Double?
    /// An explicit `apns-priority` (5 or 10); `nil`: 10 with an alert, 5 without.
    package var priority: Int?

    package init(kind: Kind, timestamp: Int64, contentState: String, alertTitle: String? = nil, alertBody: String? = nil,
                staleDate: Int64? = nil, dismissalDate: Int64? = nil, attributesType: String? = nil, attributes: String? = nil,
                relevanceScore: Double? = nil, priority: Int? = nil) {
        self.kind = kind
        self.timestamp = timestamp
        self.contentState = contentState
        self.alertTitle = alertTitle
        self.alertBody = alertBody
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.attributesType = attributesType
        self.attributes = attributes
        self.relevanceScore = relevanceScore
        self.priority = priority
    }

    /// True when the event shows an alert (then it goes at priority 10).
    package var hasAlert: Bool { alertTitle != nil || alertBody != nil }

    /// The `aps` dictionary's members, in a fixed order.
    var apsMembers: [(String, JSONValue)] {
        var aps: [(String, JSONValue)] = [("timestamp", .int(Int(timestamp))), ("event", .string(kind.rawValue)),
                                          ("content-state", .raw(contentState))]
        if kind == .start, let attributesType, let attributes {
            aps += [("attributes-type", .string(attributesType)), ("attributes", .raw(attributes))]
        }
        if let staleDate { aps.append(("stale-date", .int(Int(staleDate)))) }
        if let dismissalDate { aps.append(("dismissal-date", .int(Int(dismissalDate)))) }
        if let relevanceScore { aps.append(("relevance-score", .raw(Self.number(relevanceScore)))) }
        if hasAlert {
            var alert: [(String, JSONValue)] = []
            if let alertTitle { alert.append(("title", .string(alertTitle))) }
            if let alertBody { alert.append(("body", .string(alertBody))) }
            aps.append(("alert", .object(alert)))
        }
        return aps
    }

    /// A finite number as JSON (no exponent for the scores Apple expects, 0–100).
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

/// APNs requests of the newer push types (CONTRACT §9): Live Activity events, broadcasts, widget
/// refreshes; each the headers and payload every device's request shares.
package enum LiveActivityRequests {
    /// The topic suffix of Live Activity pushes.
    package static let activityTopicSuffix = ".push-type.liveactivity"
    /// The topic suffix of widget refreshes.
    package static let widgetsTopicSuffix = ".push-type.widgets"
    /// The topic suffix of controls refreshes.
    package static let controlsTopicSuffix = ".push-type.controls"

    /// A Live Activity event to one activity's token (update token, or push-to-start token for
    /// a start) on the app's topic (its bundle id). Throws when the payload exceeds 4 KB.
    package static func activity(_ event: LiveActivityEvent, appTopic: String) throws(PushMessageError) -> APNsPreparedMessage {
        let body = try payload(event)
        return APNsPreparedMessage(headers: headers(event, topic: appTopic + activityTopicSuffix), body: body)
    }

    /// A broadcast of `event` on a channel (`POST /4/broadcasts/apps/{bundleId}`): the same
    /// payload, with `apns-channel-id` instead of a topic.
    package static func broadcast(_ event: LiveActivityEvent, channelId: String) throws(PushMessageError) -> APNsPreparedMessage {
        var headers = headers(event, topic: nil)
        headers["apns-channel-id"] = channelId
        return APNsPreparedMessage(headers: headers, body: try payload(event))
    }

    /// A widget refresh: `{"aps": {"content-changed": true}}` on the widgets topic.
    package static func widgets(appTopic: String) -> APNsPreparedMessage {
        APNsPreparedMessage(headers: ["apns-push-type": "widgets", "apns-topic": appTopic + widgetsTopicSuffix, "apns-priority": "5",
                                      "content-type": "application/json"],
                            body: JSONValue.object([("aps", .object([("content-changed", .bool(true))]))]).encoded)
    }

    /// A controls refresh (iOS 18): `{"aps": {"content-changed": true}}` on the controls topic.
    package static func controls(appTopic: String) -> APNsPreparedMessage {
        APNsPreparedMessage(headers: ["apns-push-type": "controls", "apns-topic": appTopic + controlsTopicSuffix, "apns-priority": "5",
                                      "content-type": "application/json"],
                            body: JSONValue.object([("aps", .object([("content-changed", .bool(true))]))]).encoded)
    }

    /// The data message an Android device of the recipients gets for a Live Activity event:
    /// `{"activityId", "event", "contentState"}` (strings, as FCM's data must be).
    package static func androidData(activityId: String, event: LiveActivityEvent, expiresAt: Date) -> PushMessage {
        var message = PushMessage(notificationId: activityId, text: "", data: [
            "activityId": activityId, "event": event.kind.rawValue, "contentState": event.contentState,
        ], urgency: event.hasAlert || event.kind != .update ? .high : .normal, expiresAt: expiresAt)
        message.dataOnly = true
        return message
    }

    /// The data message an Android device gets for a widget refresh: `{"widgets": "changed"}`.
    package static func androidWidgets(expiresAt: Date) -> PushMessage {
        var message = PushMessage(notificationId: "widgets", text: "", data: ["widgets": "changed"], urgency: .normal, expiresAt: expiresAt)
        message.dataOnly = true
        return message
    }

    private static func headers(_ event: LiveActivityEvent, topic: String?) -> [String: String] {
        let priority = event.priority ?? (event.hasAlert ? 10 : 5)
        var headers = ["apns-push-type": "liveactivity", "apns-priority": String(priority), "content-type": "application/json"]
        if let topic { headers["apns-topic"] = topic }
        return headers
    }

    private static func payload(_ event: LiveActivityEvent) throws(PushMessageError) -> Data {
        let body = JSONValue.object([("aps", .object(event.apsMembers))]).encoded
        guard body.count <= APNsRequestBuilder.maximumPayloadBytes else {
            throw .payloadTooLarge(bytes: body.count, limit: APNsRequestBuilder.maximumPayloadBytes)
        }
        return body
    }
}
