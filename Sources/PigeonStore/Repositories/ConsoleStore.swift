import Foundation
import PigeonDomain
import PostgresDriver

/// What the operator console reads and changes (CONTRACT §5, issue 11): a notification's
/// recipients, a user's devices and waiting registrations, revoking a device, the reports waiting
/// for the bank. Every read is bounded and goes through an index: notifications by id, deliveries
/// by their key, devices and waiting registrations by user, the outbox by id.
package struct ConsoleStore: Sendable {
    private let pool: PostgresPool
    private let identifiers: UserIdentifiers

    package init(pool: PostgresPool, identifiers: UserIdentifiers) {
        self.pool = pool
        self.identifiers = identifiers
    }

    package typealias Recipient = ConsoleRows.Recipient

    package typealias DeviceOutcome = ConsoleRows.DeviceOutcome

    /// A page of a notification's recipients in the order they were sent, each with its devices'
    /// pushes; how many recipients there are and when the notification was sent.
    package func recipients(notificationId: String, offset: Int, limit: Int) async throws -> (total: Int, sentAt: Date, page: [Recipient])? {
        let limit = max(1, min(limit, 500)), offset = max(0, offset)
        return try await pool.withConnection(idempotent: true) { connection in
            guard let notification = try connection.query("""
                SELECT key, recipient_count, extract(epoch FROM created_at)::double precision AS created_at FROM notifications
                WHERE id = \(notificationId) ORDER BY key DESC LIMIT 1
                """).decodedFirst({ row in
                    (key: try row.decode("key", as: Int64.self), total: try row.decode("recipient_count", as: Int.self),
                     sentAt: try row.decode("created_at", as: Date.self))
                }) else { return nil }
            let recipients = try connection.query(sql: """
                SELECT user_id, state, attempts, last_error, extract(epoch FROM updated_at)::double precision AS updated_at, position,
                       extract(epoch FROM reported_early_at)::double precision AS reported_early_at
                FROM deliveries WHERE notification_key = $1::bigint
                ORDER BY position LIMIT \(limit) OFFSET \(offset)
                """, [String(notification.key)]).decoded { row in
                (position: try row.decode("position", as: Int.self),
                 recipient: Recipient(user: try row.decode("user_id"), state: try row.decode("state"), attempts: try row.decode("attempts"),
                                      lastError: try row.decodeIfPresent("last_error"), updatedAt: try row.decode("updated_at"),
                                      reportedEarlyAt: try row.decodeIfPresent("reported_early_at")))
            }
            guard let first = recipients.first?.position, let last = recipients.last?.position else {
                return (notification.total, notification.sentAt, [])
            }
            let outcomes = try connection.query("""
                SELECT position, device_id, platform, app_id, token_masked, state, attempts, last_error, service_id,
                       extract(epoch FROM sent_at)::double precision AS sent_at, extract(epoch FROM updated_at)::double precision AS updated_at,
                       extract(epoch FROM delivered_at)::double precision AS delivered_at, extract(epoch FROM opened_at)::double precision AS opened_at
                FROM device_pushes WHERE notification_key = \(String(notification.key))::bigint AND position BETWEEN \(String(first)) AND \(String(last))
                ORDER BY position, device_row_id
                """).decoded { row in
                (position: try row.decode("position", as: Int.self), outcome: DeviceOutcome(
                    deviceId: try row.decode("device_id"), platform: try row.decode("platform"), appId: try row.decodeIfPresent("app_id") ?? "",
                    maskedToken: try row.decodeIfPresent("token_masked") ?? "", state: try row.decode("state"), attempts: try row.decode("attempts"),
                    lastError: try row.decodeIfPresent("last_error"), serviceId: try row.decodeIfPresent("service_id"),
                    sentAt: try row.decodeIfPresent("sent_at"), updatedAt: try row.decode("updated_at"),
                    deliveredAt: try row.decodeIfPresent("delivered_at"), openedAt: try row.decodeIfPresent("opened_at")))
            }
            let byPosition = Dictionary(grouping: outcomes, by: \.position)
            let page = recipients.map { entry in
                var recipient = entry.recipient
                recipient.devices = byPosition[entry.position]?.map(\.outcome) ?? []
                return recipient
            }
            return (notification.total, notification.sentAt, page)
        }
    }

    package typealias DeviceSummary = ConsoleRows.DeviceSummary

    /// The user's subscribed devices (at most 100).
    package func devices(user: String) async throws -> [DeviceSummary] {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query(sql: """
                SELECT d.id, d.bank_client_id, d.device_id, d.platform, d.app_id, d.environment, d.push_token,
                       extract(epoch FROM d.created_at)::double precision AS created_at,
                       extract(epoch FROM CASE WHEN r.reached THEN r.reached_at END)::double precision AS reached_at, d.encryption_key_id
                FROM devices d LEFT JOIN device_reach r ON r.device_id = d.id
                WHERE d.\(identifiers.userColumn) = $1 ORDER BY d.id LIMIT 100
                """, [identifiers.comparable(user)]).decoded(Self.device)
        }
    }

    package typealias UserNotification = ConsoleRows.UserNotification

    /// The user's most recent notifications (at most `limit`, newest first), through the
    /// deliveries' index by user: each day's partition is read from the user's newest entry down.
    package func recentNotifications(user: String, limit: Int = 20) async throws -> [UserNotification] {
        let limit = max(1, min(limit, 100))
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query(sql: """
                SELECT n.id, d.state, d.attempts, extract(epoch FROM n.created_at)::double precision AS created_at,
                       extract(epoch FROM d.updated_at)::double precision AS updated_at
                FROM (SELECT notification_key, state, attempts, updated_at FROM deliveries
                      WHERE user_folded = lower($1) AND ($2::boolean OR user_id = $1)
                      ORDER BY notification_key DESC LIMIT \(limit)) AS d
                JOIN notifications n ON n.key = d.notification_key
                ORDER BY d.notification_key DESC
                """, [user, identifiers.caseInsensitive ? "true" : "false"]).decoded { row in
                UserNotification(notificationId: try row.decode("id"), state: try row.decode("state"), attempts: try row.decode("attempts"),
                                 sentAt: try row.decode("created_at"), updatedAt: try row.decode("updated_at"))
            }
        }
    }

    package typealias PendingRegistration = ConsoleRows.PendingRegistration

    /// The user's registrations waiting for their SMS code (at most 100).
    package func pendingRegistrations(user: String) async throws -> [PendingRegistration] {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT bank_client_id, device_id, platform, extract(epoch FROM created_at)::double precision AS created_at
                FROM pending_registrations WHERE user_folded = lower(\(user)) AND (\(identifiers.caseInsensitive ? "true" : "false")::boolean OR user_id = \(user)) ORDER BY id LIMIT 100
                """).decoded { row in
                PendingRegistration(bankClientId: try row.decode("bank_client_id"), deviceId: try row.decode("device_id"),
                                    platform: try row.decode("platform"), createdAt: try row.decode("created_at"))
            }
        }
    }

    /// Deletes a device, and with it its bearer token and push token; the device as it was, or
    /// nil when there is no such device.
    /// `reason`: why, as the user's page lists it among the removed devices.
    package func revoke(deviceId: Int64, reason: String = "revoked in the console") async throws -> (user: String, device: DeviceSummary)? {
        try await pool.withConnection { connection in
            try connection.query(sql: """
                WITH gone AS (DELETE FROM devices WHERE id = $1 RETURNING *), \(RemovedDevices.noted(reason: "$2"))
                SELECT g.id, g.bank_client_id, g.device_id, g.platform, g.app_id, g.environment, g.push_token,
                       extract(epoch FROM g.created_at)::double precision AS created_at, NULL::double precision AS reached_at,
                       NULL::text AS encryption_key_id, g.user_id
                FROM gone g
                """, [String(deviceId), String(reason.prefix(300))]).decodedFirst { row in (try row.decode("user_id"), try Self.device(row)) }
        }
    }

    package typealias RemovedDevice = ConsoleRows.RemovedDevice

    /// The user's devices removed within the retention period, newest first (at most 50).
    package func removedDevices(user: String) async throws -> [RemovedDevice] {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT device_id, platform, app_id, token_masked, reason, extract(epoch FROM removed_at)::double precision AS removed_at
                FROM removed_devices WHERE user_folded = \(user.lowercased()) AND (\(identifiers.caseInsensitive ? "true" : "false") OR user_id = \(user))
                ORDER BY removed_at DESC LIMIT 50
                """).decoded { row in
                RemovedDevice(deviceId: try row.decode("device_id"), platform: try row.decode("platform"), appId: try row.decodeIfPresent("app_id") ?? "",
                              maskedToken: try row.decodeIfPresent("token_masked") ?? "", reason: try row.decode("reason"),
                              removedAt: try row.decode("removed_at"))
            }
        }
    }

    package typealias WaitingReport = ConsoleRows.WaitingReport

    /// A page of the reports waiting for the bank, oldest first, and how many wait.
    package func waitingReports(offset: Int, limit: Int) async throws -> (total: Int, page: [WaitingReport]) {
        let limit = max(1, min(limit, 500)), offset = max(0, offset)
        return try await pool.withConnection(idempotent: true) { connection in
            let total = try connection.query(sql: "SELECT count(*) FROM outbox").scalar(as: Int.self, "the outbox's size")
            let page = try connection.query(sql: """
                SELECT id, kind, payload::text AS payload, attempts, extract(epoch FROM next_attempt_at)::double precision AS next_attempt_at,
                       last_error, extract(epoch FROM created_at)::double precision AS created_at
                FROM outbox ORDER BY id LIMIT \(limit) OFFSET \(offset)
                """).decoded { row in
                let kind: String = try row.decode("kind")
                // A report of a kind a newer version wrote is listed with what the console can tell of it.
                let report = BankReport(kind: kind, payload: try row.decode("payload"))
                // An expiry report's kind says why it is sent (timeout, reached nobody).
                return WaitingReport(id: try row.decode("id"), kind: report?.label ?? kind, subject: report?.subject ?? "(unreadable report)",
                                     concerned: report?.concerned ?? [], attempts: try row.decode("attempts"),
                                     nextAttemptAt: try row.decode("next_attempt_at"), lastError: try row.decodeIfPresent("last_error"),
                                     createdAt: try row.decode("created_at"))
            }
            return (total, page)
        }
    }

    private static func device(_ row: PostgresRow) throws -> DeviceSummary {
        DeviceSummary(id: try row.decode("id"), bankClientId: try row.decode("bank_client_id"), deviceId: try row.decode("device_id"),
                      platform: try row.decode("platform"), appId: try row.decode("app_id"), environment: try row.decode("environment"),
                      pushToken: try row.decode("push_token"), registeredAt: try row.decode("created_at"),
                      reachedAt: try row.decodeIfPresent("reached_at"), encryptionKeyId: try row.decodeIfPresent("encryption_key_id"))
    }
}
