import PigeonDomain
import SOAPCodec

/// `pushContent` of a notification.
package struct PushContentMessage: Sendable, Equatable {
    package var badge: Int32?
    package var details: [MapEntry]
    package var sound: String?
    package var text: String
    package var type: String

    package init(badge: Int32?, details: [MapEntry], sound: String?, text: String, type: String) {
        self.badge = badge
        self.details = details
        self.sound = sound
        self.text = text
        self.type = type
    }
}

/// A `notification` as the bank sends it and as getNotificationDetails returns it.
package struct NotificationMessage: Sendable, Equatable {
    /// True: only the phone may read the content (CONTRACT §8).
    package var confidential: Bool?
    package var details: [MapEntry]?
    package var id: String
    /// `passive`, `active` or `time-sensitive` (CONTRACT §9), checked against the schema's enumeration.
    package var interruptionLevel: String?
    package var perishable: Bool?
    package var priority: Int32?
    package var pushContent: PushContentMessage
    package var recipients: [String]
    package var timeout: Int32

    package init(
        confidential: Bool? = nil, details: [MapEntry]?, id: String, interruptionLevel: String? = nil, perishable: Bool?, priority: Int32?,
        pushContent: PushContentMessage, recipients: [String], timeout: Int32
    ) {
        self.interruptionLevel = interruptionLevel
        self.confidential = confidential
        self.details = details
        self.id = id
        self.perishable = perishable
        self.priority = priority
        self.pushContent = pushContent
        self.recipients = recipients
        self.timeout = timeout
    }

    /// Reads a decoded sendNotification request: its `notification` record and the recipients
    /// the parser streamed into a list.
    package init(sendNotification request: SOAPRequest) throws(SOAPFault) {
        guard let record = request.parameters.record("notification") else { throw .client("missing required element 'notification'") }
        try self.init(record: record, recipients: request.streamedList)
    }

    /// The longest `timeout` accepted: a year. A longer one is a mistake (milliseconds for
    /// seconds), and its deliveries would outlive any retention.
    package static let maximumTimeoutSeconds = 31_536_000

    /// Reads a decoded `notification` record, checking what the schema cannot express:
    /// a non-empty id and recipients, and a positive timeout. `recipients` when they were read
    /// apart from the record (a streamed request), else the record's.
    package init(record: SOAPRecord, recipients streamed: [String]? = nil) throws(SOAPFault) {
        guard let id = record.string("id"), let timeout = record.int("timeout"),
              let content = record.record("pushContent"), let text = content.string("text"),
              let type = content.string("type")
        else {
            throw .client("notification is incomplete")
        }
        guard !id.isEmpty else { throw .client("element 'notification/id' must not be empty") }
        try SOAPFault.refuseControlCharacters(id, in: "notification/id")
        guard timeout > 0 else {
            throw .client("element 'notification/timeout' must be a positive number of seconds, got \(timeout)")
        }
        guard timeout <= Self.maximumTimeoutSeconds else {
            throw .client("element 'notification/timeout' must be at most \(Self.maximumTimeoutSeconds) seconds (a year), got \(timeout)")
        }
        let recipients = streamed ?? record.strings("recipients")
        if let blank = recipients.firstIndex(where: { $0.isEmpty }) {
            throw .client("element 'notification/recipients' number \(blank + 1) is empty")
        }
        if let bad = recipients.firstIndex(where: ControlCharacters.present(in:)) {
            throw .client("element 'notification/recipients' number \(bad + 1) contains control characters (CR, LF, NUL, …)")
        }
        self.init(
            confidential: record.boolean("confidential"),
            details: record.record("details").map(Self.entries),
            id: id,
            interruptionLevel: record.string("interruptionLevel"),
            perishable: record.boolean("perishable"),
            priority: record.int("priority"),
            pushContent: PushContentMessage(
                badge: content.int("badge"),
                details: content.record("details").map(Self.entries) ?? [],
                sound: content.string("sound"),
                text: text,
                type: type),
            recipients: recipients,
            timeout: timeout)
    }

    /// The record getNotificationDetails answers with.
    package var record: SOAPRecord {
        var content = SOAPRecord()
        content["badge"] = pushContent.badge.map(SOAPValue.int)
        content["details"] = pushContent.details.isEmpty ? nil : .record(Self.map(pushContent.details))
        content["sound"] = pushContent.sound.map(SOAPValue.string)
        content["text"] = .string(pushContent.text)
        content["type"] = .string(pushContent.type)

        var notification = SOAPRecord()
        notification["confidential"] = confidential.map(SOAPValue.boolean)
        notification["details"] = details.map { .record(Self.map($0)) }
        notification["id"] = .string(id)
        notification["interruptionLevel"] = interruptionLevel.map(SOAPValue.string)
        notification["perishable"] = perishable.map(SOAPValue.boolean)
        notification["priority"] = priority.map(SOAPValue.int)
        notification["pushContent"] = .record(content)
        notification.fields["recipients"] = recipients.map(SOAPValue.string)
        notification["timeout"] = .int(timeout)
        return notification
    }

    private static func entries(_ map: SOAPRecord) -> [MapEntry] {
        map.records("entry").map { MapEntry(key: $0.string("key") ?? "", value: $0.string("value") ?? "") }
    }

    private static func map(_ entries: [MapEntry]) -> SOAPRecord {
        SOAPRecord(["entry": entries.map { .record(SOAPRecord(["key": [.string($0.key)], "value": [.string($0.value)]])) }])
    }
}

/// The `return` of every inbound operation: a status, an optional message and the operation's
/// own fields.
package struct InboundResult: Sendable {
    package enum Status: String, Sendable {
        case ok = "OK"
        case entityNotFound = "ENTITY_NOT_FOUND"
        case duplicatedEntity = "DUPLICATED_ENTITY"
        case internalServerError = "INTERNAL_SERVER_ERROR"
    }

    package private(set) var record: SOAPRecord

    package init(status: Status, errorMessage: String? = nil) {
        record = SOAPRecord()
        record["status"] = .string(status.rawValue)
        record["errorMessage"] = errorMessage.map(SOAPValue.string)
    }

    /// Adds `deliveryStatus` as a map from user to state, in the given order.
    package func with(deliveryStatus: [(user: String, state: String)]) -> InboundResult {
        with(deliveryStatus: deliveryStatus.map { MapEntry(key: $0.user, value: $0.state) })
    }

    /// Adds `deliveryStatus` from entries of user and state, in the given order (a send's answer
    /// built without an intermediate list).
    package func with(deliveryStatus entries: [MapEntry]) -> InboundResult {
        var copy = self
        copy.record["deliveryStatus"] = .entries(entries)
        return copy
    }

    /// Adds the notification as sent.
    package func with(notification: NotificationMessage) -> InboundResult {
        var copy = self
        copy.record["notification"] = .record(notification.record)
        return copy
    }

    /// Adds an operation's own field (`version`, `devices` of the pass operations).
    package func with(_ name: String, _ value: SOAPValue) -> InboundResult {
        var copy = self
        copy.record[name] = value
        return copy
    }

    /// Adds one `exists` per user.
    package func with(exists: [Bool]) -> InboundResult {
        var copy = self
        copy.record.fields["exists"] = exists.map(SOAPValue.boolean)
        return copy
    }
}
