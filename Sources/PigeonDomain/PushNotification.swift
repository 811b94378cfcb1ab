/// A key/value pair of a details map, kept exactly as the bank sent it.
package struct KeyValue: Sendable, Equatable, Codable {
    package var key: String
    package var value: String

    package init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}

/// What the app does when the user opens the push.
package enum PushType: String, Sendable, CaseIterable, Codable {
    case universal = "UNIVERSAL"
    case product = "PRODUCT"
    case form = "FORM"
    case showMap = "SHOW_MAP"
    case url = "URL"
    case pinCode = "PIN_CODE"
    case message = "MESSAGE"
}

/// How strongly an iOS alert may interrupt (CONTRACT §9): APNs `aps.interruption-level`. A
/// `time-sensitive` alert breaks through Focus (a fraud alert); `passive` arrives silently.
package enum InterruptionLevel: String, Sendable, CaseIterable, Codable {
    case passive
    case active
    case timeSensitive = "time-sensitive"
}

/// The visible part of a push.
package struct PushContent: Sendable, Equatable {
    package var badge: Int?
    package var sound: String?
    package var text: String
    package var type: PushType
    /// Carries `target` (product id, form id, map id, URL, PIN code or `nil`) and any other keys.
    package var details: [KeyValue]

    package init(badge: Int? = nil, sound: String? = nil, text: String, type: PushType, details: [KeyValue] = []) {
        self.badge = badge
        self.sound = sound
        self.text = text
        self.type = type
        self.details = details
    }

    /// The type's target, from the `target` key of ``details``.
    package var target: String? {
        details.first { $0.key == "target" }?.value
    }
}

/// A notification as the bank sent it. Optional fields stay `nil` when absent so that
/// getNotificationDetails can answer exactly what was sent.
package struct PushNotification: Sendable, Equatable {
    package var id: String
    package var recipients: [String]
    package var timeoutSeconds: Int
    package var pushContent: PushContent
    package var details: [KeyValue]?
    package var perishable: Bool?
    package var priority: Int?
    /// True when only the phone may read it (CONTRACT §8): sent so by the bank, or of a type in
    /// `confidentialTypes`.
    package var confidential: Bool?
    /// True once a confidential notification's content was erased (it is over): its text is
    /// empty and it has neither target nor details.
    package var contentErased: Bool
    /// The alert's interruption level on iOS, as the bank sent it (`nil`: Apple's default, active).
    package var interruptionLevel: InterruptionLevel?

    package init(
        id: String, recipients: [String], timeoutSeconds: Int, pushContent: PushContent,
        details: [KeyValue]? = nil, perishable: Bool? = nil, priority: Int? = nil, confidential: Bool? = nil,
        contentErased: Bool = false, interruptionLevel: InterruptionLevel? = nil
    ) {
        self.interruptionLevel = interruptionLevel
        self.confidential = confidential
        self.contentErased = contentErased
        self.id = id
        self.recipients = recipients
        self.timeoutSeconds = timeoutSeconds
        self.pushContent = pushContent
        self.details = details
        self.perishable = perishable
        self.priority = priority
    }
}

extension PushNotification {
    /// Whether its content must travel sealed and be erased once it is over.
    package var isConfidential: Bool { confidential == true }

    /// The longest text a confidential notification carries, in UTF-8 bytes: its sealed push
    /// stays within the services' 4 KB with room for details.
    package static let maximumConfidentialTextBytes = 1024
}

/// One recipient's state.
package struct RecipientState: Sendable, Equatable {
    package var user: String
    package var state: DeliveryState

    package init(user: String, state: DeliveryState) {
        self.user = user
        self.state = state
    }
}

/// A mobile platform and the push service that reaches it.
package enum Platform: String, Sendable, CaseIterable, Codable {
    case ios = "IOS"
    case android = "ANDROID"
    /// RuStore push, for Android phones without Google services.
    case rustore = "RUSTORE"
    /// Huawei Push Kit, for Huawei phones without Google services.
    case huawei = "HUAWEI"
    /// Web Push, for the internet bank in a browser; the push token is the browser's subscription.
    case web = "WEB"

    /// The push service that reaches it, as metrics label it.
    package var pushService: String {
        switch self {
        case .ios: "apns"
        case .android: "fcm"
        case .rustore: "rustore"
        case .huawei: "huawei"
        case .web: "webpush"
        }
    }
}
