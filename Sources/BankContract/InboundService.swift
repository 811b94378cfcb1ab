import PigeonDomain
import SOAPCodec

/// The inbound service the bank backend calls (`SBIInboundWebService`), described once: the
/// decoder, the encoder and the WSDL all read this description.
package enum InboundService {
    package static let namespace = "http://inbound.sbi.pigeon.idamobile.com/"

    /// Field limits applied when decoding.
    package enum Limits {
        package static let identifier = 256
        package static let text = 4_000
        package static let sound = 256
        package static let mapKey = 256
        package static let mapValue = 4_096
        package static let mapEntries = 100
        package static let users = 10_000
        /// Pass type identifiers and serial numbers (Apple's web service puts them in paths).
        package static let passIdentifier = 128
        package static let authenticationToken = 256
        /// A signed `.pkpass` archive, and the files of one to be signed, together.
        package static let passBytes = 10 * 1024 * 1024
        /// `pass.json` sent to be signed.
        package static let passJson = 256 * 1024
        /// Files (images, localisations) sent with `passJson`.
        package static let passFiles = 100
        package static let passFileName = 256
    }

    // MARK: Types

    package static let status = EnumerationType(
        name: "status", values: ["OK", "ENTITY_NOT_FOUND", "DUPLICATED_ENTITY", "INTERNAL_SERVER_ERROR"])
    package static let deliveryState = EnumerationType(
        name: "deliveryState",
        values: ["QUEUED", "SENT", "DELIVERED", "READ", "SENDING_FAILED", "INVALID_SUBSCRIPTION", "EXPIRED"])
    package static let passDeviceState = EnumerationType(
        name: "passDeviceState", values: PassDeliveryState.allCases.map(\.rawValue))
    /// CONTRACT §9: APNs `interruption-level` values.
    package static let interruptionLevel = EnumerationType(
        name: "interruptionLevel", values: InterruptionLevel.allCases.map(\.rawValue))
    package static let pushType = EnumerationType(
        name: "pushType", values: ["UNIVERSAL", "PRODUCT", "FORM", "SHOW_MAP", "URL", "PIN_CODE", "MESSAGE"])

    static let mapEntry = ComplexType(
        name: "stringMapEntry",
        fields: [Field("key", .string(maxLength: Limits.mapKey)), .optional("value", .string(maxLength: Limits.mapValue))])
    static let stringMap = ComplexType(
        name: "stringMap", fields: [.list("entry", .complex(mapEntry), maxOccurs: Limits.mapEntries)])
    static let deliveryStatusEntry = ComplexType(
        name: "deliveryStatusEntry",
        fields: [Field("key", .string(maxLength: Limits.identifier)), Field("value", .enumeration(deliveryState))])
    static let deliveryStatusMap = ComplexType(
        name: "deliveryStatusMap", fields: [.list("entry", .complex(deliveryStatusEntry))])

    static let passDeviceEntry = ComplexType(
        name: "passDeviceEntry",
        fields: [Field("key", .string(maxLength: Limits.passIdentifier)), Field("value", .enumeration(passDeviceState))])
    static let passDeviceMap = ComplexType(
        name: "passDeviceMap", fields: [.list("entry", .complex(passDeviceEntry))])

    static let passFile = ComplexType(
        name: "passFile",
        fields: [Field("name", .string(maxLength: Limits.passFileName)), Field("content", .base64Binary(maxBytes: Limits.passBytes))])

    static let pushContent = ComplexType(
        name: "pushContent",
        fields: [
            .optional("badge", .int),
            .optional("details", .complex(stringMap)),
            .optional("sound", .string(maxLength: Limits.sound)),
            Field("text", .string(maxLength: Limits.text)),
            Field("type", .enumeration(pushType)),
        ])
    static let notification = ComplexType(
        name: "notification",
        fields: [
            // CONTRACT §8; optional, so a client built from an older WSDL sends as before.
            .optional("confidential", .boolean),
            .optional("details", .complex(stringMap)),
            Field("id", .string(maxLength: Limits.identifier)),
            // CONTRACT §9; optional like `confidential`.
            .optional("interruptionLevel", .enumeration(interruptionLevel)),
            .optional("perishable", .boolean),
            .optional("priority", .int),
            Field("pushContent", .complex(pushContent)),
            // As many as maxRequestBytes carries (CONTRACT §1: 1..n).
            .list("recipients", .string(maxLength: Limits.identifier), minOccurs: 1),
            Field("timeout", .int),
        ])

    static func result(_ name: String, _ extra: [Field]) -> ComplexType {
        ComplexType(
            name: name,
            fields: [Field("status", .enumeration(status)), .optional("errorMessage", .string(maxLength: .max))] + extra)
    }

    // MARK: Operations

    package static let sendNotification = OperationDescription(
        name: "sendNotification",
        requestFields: [Field("notification", .complex(notification))],
        returnType: result("sendNotificationResult", [.optional("deliveryStatus", .complex(deliveryStatusMap))]),
        streamedList: ["notification", "recipients"])
    package static let getNotificationDetails = OperationDescription(
        name: "getNotificationDetails",
        requestFields: [Field("id", .string(maxLength: Limits.identifier))],
        returnType: result("notificationDetailsResult", [.optional("notification", .complex(notification))]))
    package static let getDeliveryStatus = OperationDescription(
        name: "getDeliveryStatus",
        requestFields: [Field("id", .string(maxLength: Limits.identifier))],
        returnType: result("deliveryStatusResult", [.optional("deliveryStatus", .complex(deliveryStatusMap))]))
    package static let deleteSubscription = OperationDescription(
        name: "deleteSubscription",
        requestFields: [Field("user", .string(maxLength: Limits.identifier))],
        returnType: result("deleteSubscriptionResult", []))
    package static let checkSubscriptionExists = OperationDescription(
        name: "checkSubscriptionExists",
        requestFields: [.list("user", .string(maxLength: Limits.identifier), minOccurs: 1, maxOccurs: Limits.users)],
        returnType: result("checkSubscriptionExistsResult", [.list("exists", .boolean)]))

    /// Stores a new version of a Wallet pass and queues an update push to every device
    /// registered for it (CONTRACT §7); `version` is the stored version's number. The pass comes
    /// signed (`pass`, a `.pkpass`), or as `passJson` and its `files` for the gateway to sign.
    package static let updatePass = OperationDescription(
        name: "updatePass",
        requestFields: [
            Field("passTypeIdentifier", .string(maxLength: Limits.passIdentifier)),
            Field("serialNumber", .string(maxLength: Limits.passIdentifier)),
            Field("authenticationToken", .string(maxLength: Limits.authenticationToken)),
            .optional("pass", .base64Binary(maxBytes: Limits.passBytes)),
            .optional("passJson", .string(maxLength: Limits.passJson)),
            .list("files", .complex(passFile), maxOccurs: Limits.passFiles),
        ],
        returnType: result("updatePassResult", [.optional("version", .long)]))
    /// A pass's current version and each registered device's state, by device library identifier.
    package static let getPassStatus = OperationDescription(
        name: "getPassStatus",
        requestFields: [
            Field("passTypeIdentifier", .string(maxLength: Limits.passIdentifier)),
            Field("serialNumber", .string(maxLength: Limits.passIdentifier)),
        ],
        returnType: result("passStatusResult", [.optional("version", .long), .optional("devices", .complex(passDeviceMap))]))

    // MARK: Live Activities, broadcast channels, widgets (CONTRACT §9)

    package static let activityState = EnumerationType(
        name: "activityState", values: ActivityRecipientState.allCases.map(\.rawValue))
    static let activityStatusEntry = ComplexType(
        name: "activityStatusEntry",
        fields: [Field("key", .string(maxLength: Limits.identifier)), Field("value", .enumeration(activityState))])
    static let activityStatusMap = ComplexType(
        name: "activityStatusMap", fields: [.list("entry", .complex(activityStatusEntry))])

    /// Limits of the activity fields.
    package enum ActivityLimits {
        package static let identifier = ActivityFields.maximumIdentifierLength
        package static let json = ActivityFields.maximumJSONBytes
        package static let alertTitle = 256
        package static let alertBody = 1_024
    }

    static let activityAlert: [Field] = [
        .optional("alertTitle", .string(maxLength: ActivityLimits.alertTitle)),
        .optional("alertBody", .string(maxLength: ActivityLimits.alertBody)),
    ]

    /// Starts a Live Activity on every device of the recipients that can show it: `attributes`
    /// and `contentState` are JSON object texts; the answer has each recipient's state.
    package static let startActivity = OperationDescription(
        name: "startActivity",
        requestFields: [
            Field("activityId", .string(maxLength: ActivityLimits.identifier)),
            Field("activityType", .string(maxLength: ActivityLimits.identifier)),
            .list("recipients", .string(maxLength: Limits.identifier), minOccurs: 1, maxOccurs: Limits.users),
            Field("attributes", .string(maxLength: ActivityLimits.json)),
            Field("contentState", .string(maxLength: ActivityLimits.json)),
        ] + activityAlert + [
            .optional("staleAfterSeconds", .int),
            .optional("relevanceScore", .int),
        ],
        returnType: result("startActivityResult", [.optional("activityStatus", .complex(activityStatusMap))]))
    package static let updateActivity = OperationDescription(
        name: "updateActivity",
        requestFields: [
            Field("activityId", .string(maxLength: ActivityLimits.identifier)),
            Field("contentState", .string(maxLength: ActivityLimits.json)),
        ] + activityAlert + [
            .optional("staleAfterSeconds", .int),
            .optional("priority", .int),
        ],
        returnType: result("updateActivityResult", []))
    package static let endActivity = OperationDescription(
        name: "endActivity",
        requestFields: [
            Field("activityId", .string(maxLength: ActivityLimits.identifier)),
            .optional("contentState", .string(maxLength: ActivityLimits.json)),
            .optional("dismissAfterSeconds", .int),
        ],
        returnType: result("endActivityResult", []))
    package static let getActivityStatus = OperationDescription(
        name: "getActivityStatus",
        requestFields: [Field("activityId", .string(maxLength: ActivityLimits.identifier))],
        returnType: result("activityStatusResult", [.optional("activityStatus", .complex(activityStatusMap))]))
    /// Creates a broadcast channel for an activity type through Apple's channel management API
    /// (`storagePolicy` 0: no message storage, 1: the most recent message stored); `appId`
    /// names the app (absent: the default app).
    package static let createActivityChannel = OperationDescription(
        name: "createActivityChannel",
        requestFields: [
            Field("activityType", .string(maxLength: ActivityLimits.identifier)),
            .optional("appId", .string(maxLength: 64)),
            Field("storagePolicy", .int),
        ],
        returnType: result("createActivityChannelResult", [.optional("channelId", .string(maxLength: .max))]))
    package static let deleteActivityChannel = OperationDescription(
        name: "deleteActivityChannel",
        requestFields: [Field("channelId", .string(maxLength: ActivityLimits.identifier))],
        returnType: result("deleteActivityChannelResult", []))
    package static let broadcastActivityUpdate = OperationDescription(
        name: "broadcastActivityUpdate",
        requestFields: [
            Field("channelId", .string(maxLength: ActivityLimits.identifier)),
            Field("contentState", .string(maxLength: ActivityLimits.json)),
        ] + activityAlert + [
            .optional("end", .boolean),
            .optional("staleAfterSeconds", .int),
        ],
        returnType: result("broadcastActivityUpdateResult", []))
    /// Asks every iPhone (widgets push) and Android device (data message) of the recipients to
    /// refresh the app's widgets.
    package static let refreshWidgets = OperationDescription(
        name: "refreshWidgets",
        requestFields: [.list("recipients", .string(maxLength: Limits.identifier), minOccurs: 1, maxOccurs: Limits.users)],
        returnType: result("refreshWidgetsResult", []))

    /// Asks every iPhone of the recipients to reload the app's controls (iOS 18 Control Center and
    /// Lock Screen): a `controls` push on `<bundle>.push-type.controls`.
    package static let refreshControls = OperationDescription(
        name: "refreshControls",
        requestFields: [.list("recipients", .string(maxLength: Limits.identifier), minOccurs: 1, maxOccurs: Limits.users)],
        returnType: result("refreshControlsResult", []))

    /// The whole service.
    package static let description = ServiceDescription(
        name: "SBIInboundWebService",
        targetNamespace: namespace,
        operations: [sendNotification, getNotificationDetails, getDeliveryStatus, deleteSubscription, checkSubscriptionExists,
                     updatePass, getPassStatus, startActivity, updateActivity, endActivity, getActivityStatus,
                     createActivityChannel, deleteActivityChannel, broadcastActivityUpdate, refreshWidgets, refreshControls])
}
