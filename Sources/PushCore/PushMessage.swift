import Foundation

/// One push as the transports send it, independent of where it came from.
package struct PushMessage: Sendable, Equatable {
    package enum Urgency: Sendable, Equatable {
        /// APNs priority 10, FCM `HIGH`: wake the device now (PIN codes).
        case high
        /// APNs priority 5, FCM `NORMAL`: delivered when convenient for the device's power.
        case normal
    }

    /// The notification id: APNs collapse id and a custom key, FCM data.
    package var notificationId: String
    package var text: String
    package var badge: Int?
    package var sound: String?
    /// Custom keys for the app: type, target, …
    package var data: [String: String]
    package var urgency: Urgency
    /// After this the services may drop the push (APNs `apns-expiration`, FCM `ttl`).
    package var expiresAt: Date
    /// Set for a confidential notification (CONTRACT §8): ``text`` is then the neutral alert,
    /// ``data`` is empty, and the content travels sealed (or is fetched by the app).
    package var confidential: ConfidentialMode?
    /// APNs `aps.interruption-level` (`passive`, `active`, `time-sensitive`); `nil`: not sent.
    package var interruptionLevel: String?
    /// True for a data message to Android (FCM, RuStore, Huawei): ``data`` only, no notification
    /// and no `notificationId` (a Live Activity's or a widget's update for the app, CONTRACT §9).
    package var dataOnly = false

    package init(notificationId: String, text: String, badge: Int? = nil, sound: String? = nil, data: [String: String] = [:], urgency: Urgency, expiresAt: Date,
                confidential: ConfidentialMode? = nil, interruptionLevel: String? = nil) {
        self.interruptionLevel = interruptionLevel
        self.confidential = confidential
        self.notificationId = notificationId
        self.text = text
        self.badge = badge
        self.sound = sound
        self.data = data
        self.urgency = urgency
        self.expiresAt = expiresAt
    }
}

extension PushMessage {
    /// The same push asking the app to fetch its content (CONTRACT §8's `fetch`), for a message
    /// sealed to the device; nil for any other.
    package var fetching: PushMessage? {
        guard case .encrypted = confidential else { return nil }
        var message = self
        message.confidential = .fetch
        return message
    }

    /// `message` prepared by `prepare`; a sealed confidential message whose payload is over its
    /// service's limit (a big sealed content: details, a long target) is prepared as `fetch`
    /// instead — the app fetches the content over its authenticated API — rather than failing
    /// on every device.
    package static func prepared<Prepared>(_ message: PushMessage,
                                           by prepare: (PushMessage) throws(PushMessageError) -> Prepared) -> Result<Prepared, PushMessageError> {
        do {
            return .success(try prepare(message))
        } catch {
            guard case .payloadTooLarge = error, let fetching = message.fetching else { return .failure(error) }
            return Result { () throws(PushMessageError) in try prepare(fetching) }
        }
    }
}

/// Why a message cannot be sent at all.
package enum PushMessageError: Error, Equatable, CustomStringConvertible {
    case payloadTooLarge(bytes: Int, limit: Int)

    package var description: String {
        switch self {
        case .payloadTooLarge(let bytes, let limit): "payload of \(bytes) bytes exceeds the \(limit)-byte limit"
        }
    }
}

/// An HTTP/2 request ready for a transport: path, headers and body.
package struct PushRequest: Sendable, Equatable {
    package var path: String
    package var headers: [String: String]
    package var body: Data
}

extension PushMessage {
    /// The identifier that makes a repeated push replace the first on the screen (CONTRACT §9):
    /// the notification id when it fits the 64 bytes APNs allows for `apns-collapse-id`, else its
    /// first characters and a hash of the whole id (two long ids sharing a beginning stay apart).
    /// Android's notification `tag` is the same.
    package var collapseIdentifier: String {
        let limit = APNsRequestBuilder.maximumCollapseIdBytes
        guard notificationId.utf8.count > limit else { return notificationId }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 64 bits: stable across processes.
        for byte in notificationId.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let suffix = "~" + String(hash, radix: 16)
        var prefix = Substring(notificationId)
        while prefix.utf8.count + suffix.utf8.count > limit { prefix.removeLast() }
        return prefix + suffix
    }

    /// The message's data as JSON members of string values, keys sorted (a payload is
    /// reproducible), `notificationId` last: what FCM, RuStore and Huawei carry as data.
    package var dataMembers: [(String, JSONValue)] {
        if dataOnly { return data.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) } }
        var members = data.filter { $0.key != "notificationId" }.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) }
        members.append(("notificationId", .string(notificationId)))
        return members
    }
}
