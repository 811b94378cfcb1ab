import Foundation
import PigeonCore
import PigeonDomain

/// The console's JSON twins (CONTRACT §5) for a bank's support tooling: the same data as the
/// pages, tokens masked, a confidential notification's content never included.
package enum ConsoleJSON {
    /// `GET /console/api/v1/notifications/{id}`: the notification and a page of its recipients,
    /// each with its devices' pushes.
    package static func notification(_ view: ConsoleNotificationView, page: Int) -> [String: Any] {
        let notification = view.notification
        return [
            "id": notification.id,
            "type": notification.pushContent.type.rawValue,
            "sentAt": timestamp(view.sentAt),
            "timeout": notification.timeoutSeconds,
            "confidential": notification.isConfidential,
            "page": page,
            "pageSize": ConsolePaging.pageSize,
            "total": view.total,
            "recipients": view.recipients.map { recipient -> [String: Any] in
                [
                    "user": recipient.user,
                    "state": recipient.state,
                    "attempts": recipient.attempts,
                    "lastError": recipient.lastError ?? NSNull(),
                    "reportedEarlyAt": recipient.reportedEarlyAt.map(timestamp) ?? NSNull(),
                    "updatedAt": timestamp(recipient.updatedAt),
                    "devices": recipient.devices.map(device),
                ]
            },
        ]
    }

    package static func device(_ push: ConsoleRows.DeviceOutcome) -> [String: Any] {
        [
            "deviceId": push.deviceId,
            "platform": push.platform,
            "appId": push.appId.isEmpty ? "default" : push.appId,
            "pushToken": push.maskedToken,
            "state": push.state,
            "attempts": push.attempts,
            "lastError": push.lastError ?? NSNull(),
            "service": Platform(rawValue: push.platform)?.pushService ?? push.platform.lowercased(),
            "serviceId": push.serviceId ?? NSNull(),
            "sentAt": push.sentAt.map(timestamp) ?? NSNull(),
            "updatedAt": timestamp(push.updatedAt),
            "deliveredAt": push.deliveredAt.map(timestamp) ?? NSNull(),
            "openedAt": push.openedAt.map(timestamp) ?? NSNull(),
        ]
    }

    /// `GET /console/api/v1/users/{user}`: the user's devices (when each was last reached, or
    /// null) and recent notifications.
    package static func user(_ user: String, _ view: ConsoleUserView) -> [String: Any] {
        [
            "user": user,
            "devices": view.devices.map { device -> [String: Any] in
                [
                    "deviceId": device.deviceId,
                    "bankClientId": device.bankClientId,
                    "platform": device.platform,
                    "appId": device.appId.isEmpty ? "default" : device.appId,
                    "environment": device.environment,
                    "pushToken": Redaction.token(device.pushToken),
                    "encryptionKeyId": device.encryptionKeyId ?? NSNull(),
                    "registeredAt": timestamp(device.registeredAt),
                    "lastReachedAt": device.reachedAt.map(timestamp) ?? NSNull(),
                ]
            },
            "removedDevices": view.removed.map { device -> [String: Any] in
                ["deviceId": device.deviceId, "platform": device.platform, "appId": device.appId.isEmpty ? "default" : device.appId,
                 "pushToken": device.maskedToken, "reason": device.reason, "removedAt": timestamp(device.removedAt)]
            },
            "waitingForCode": view.pending.map { ["deviceId": $0.deviceId, "platform": $0.platform, "since": timestamp($0.createdAt)] },
            "notifications": view.recent.map { notification -> [String: Any] in
                ["id": notification.notificationId, "state": notification.state, "attempts": notification.attempts,
                 "sentAt": timestamp(notification.sentAt), "updatedAt": timestamp(notification.updatedAt)]
            },
        ]
    }

    /// `POST /console/api/v1/notifications/{id}/reveal`: the unmasked text, target and details
    /// (never called for a confidential notification).
    package static func revealed(_ view: ConsoleNotificationView) -> [String: Any] {
        let content = view.notification.pushContent
        return [
            "id": view.notification.id,
            "text": content.text,
            "target": content.target ?? NSNull(),
            "details": Dictionary(content.details.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first }),
        ]
    }

    /// `GET /console/api/v1/audit`: a page of the trail, newest first.
    package static func audit(_ entries: [AuditEntry], page: Int) -> [String: Any] {
        [
            "page": page,
            "pageSize": ConsolePaging.pageSize,
            "entries": entries.map { entry -> [String: Any] in
                ["at": timestamp(entry.at), "operator": entry.operatorName, "role": entry.role, "address": entry.address,
                 "action": entry.action.rawValue, "target": entry.target, "reason": entry.reason, "outcome": entry.outcome]
            },
        ]
    }

    /// An ISO 8601 instant (`2026-12-01T00:00:00Z`, fractional seconds and offsets allowed).
    package static func parseTimestamp(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// An instant as ISO 8601 in UTC with milliseconds (`2026-12-06T09:30:00.250Z`).
    package static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
