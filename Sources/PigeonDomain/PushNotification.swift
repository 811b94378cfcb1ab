/// A key/value pair of a details map, kept exactly as the bank sent it.
public struct KeyValue: Sendable, Equatable, Codable {
    public var key: String
    public var value: String

    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}

/// What the app does when the user opens the push.
public enum PushType: String, Sendable, CaseIterable, Codable {
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
public enum InterruptionLevel: String, Sendable, CaseIterable, Codable {
    case passive
    case active
    case timeSensitive = "time-sensitive"
}

/// The visible part of a push.
public struct PushContent: Sendable, Equatable {
    public var badge: Int?
    public var sound: String?
    public var text: String
    public var type: PushType
    /// Carries `target` (product id, form id, map id, URL, PIN code or `nil`) and any other keys.
    public var details: [KeyValue]

    public init(badge: Int? = nil, sound: String? = nil, text: String, type: PushType, details: [KeyValue] = []) {
        self.badge = badge
        self.sound = sound
        self.text = text
        self.type = type
        self.details = details
    }

    /// The type's target, from the `target` key of ``details``.
    public var target: String? {
        details.first { $0.key == "target" }?.value
    }
}

/// A notification as the bank sent it. Optional fields stay `nil` when absent so that
/// getNotificationDetails can answer exactly what was sent.
public struct PushNotification: Sendable, Equatable {
    public var id: String
    public var recipients: [String]
    public var timeoutSeconds: Int
    public var pushContent: PushContent
    public var details: [KeyValue]?
    public var perishable: Bool?
    public var priority: Int?
    /// True when only the phone may read it (CONTRACT §8): sent so by the bank, or of a type in
    /// `confidentialTypes`.
    public var confidential: Bool?
    /// True once a confidential notification's content was erased (it is over): its text is
    /// empty and it has neither target nor details.
    public var contentErased: Bool
    /// The alert's interruption level on iOS, as the bank sent it (`nil`: Apple's default, active).
    public var interruptionLevel: InterruptionLevel?

    public init(
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
    public var isConfidential: Bool { confidential == true }

    /// The longest text a confidential notification carries, in UTF-8 bytes: its sealed push
    /// stays within the services' 4 KB with room for details.
    public static let maximumConfidentialTextBytes = 1024
}

/// One recipient's state.
public struct RecipientState: Sendable, Equatable {
    public var user: String
    public var state: DeliveryState

    public init(user: String, state: DeliveryState) {
        self.user = user
        self.state = state
    }
}

/// A mobile platform and the push service that reaches it.
public enum Platform: String, Sendable, CaseIterable, Codable {
    case ios = "IOS"
    case android = "ANDROID"
    /// RuStore push, for Android phones without Google services.
    case rustore = "RUSTORE"
    /// Huawei Push Kit, for Huawei phones without Google services.
    case huawei = "HUAWEI"
    /// Web Push, for the internet bank in a browser; the push token is the browser's subscription.
    case web = "WEB"

    /// The push service that reaches it, as metrics label it.
    public var pushService: String {
        switch self {
        case .ios: "apns"
        case .android: "fcm"
        case .rustore: "rustore"
        case .huawei: "huawei"
        case .web: "webpush"
        }
    }
}
