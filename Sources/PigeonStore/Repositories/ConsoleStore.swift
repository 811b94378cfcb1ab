import Foundation
import PigeonDomain

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

    /// One recipient of a notification, with what became of each of its devices' pushes.
    package struct Recipient: Sendable, Equatable {
        package var user: String
        package var state: String
        package var attempts: Int
        package var lastError: String?
        package var updatedAt: Date
        package var devices: [DeviceOutcome] = []
    }

    /// One device's push of a delivery (CONTRACT §5).
    package struct DeviceOutcome: Sendable, Equatable {
        package var deviceId: String
        package var platform: String
        package var appId: String
        /// Shortened when written; never the whole token.
        package var maskedToken: String
        package var state: String
        package var attempts: Int
        package var lastError: String?
        /// APNs' apns-id or FCM's message name.
        package var serviceId: String?
        package var sentAt: Date?
        package var updatedAt: Date
    }

    /// A page of a notification's recipients in the order they were sent, each with its devices'
    /// pushes; how many recipients there are and when the notification was sent.
    package func recipients(notificationId: String, offset: Int, limit: Int) async throws -> (total: Int, sentAt: Date, page: [Recipient])? {
        let limit = max(1, min(limit, 500)), offset = max(0, offset)
        return try await pool.withConnection(idempotent: true) { connection in
            guard let row = try connection.query("""
                SELECT key, recipient_count, extract(epoch FROM created_at)::double precision FROM notifications
                WHERE id = $1 ORDER BY key DESC LIMIT 1
                """, [notificationId]).rows.first,
                  let key = row.text(0), let total = row.integer(1), let sent = row.text(2).flatMap(Double.init) else { return nil }
            var positions: [Int] = []
            var page = try connection.query("""
                SELECT user_id, state, attempts, last_error, extract(epoch FROM updated_at)::double precision, position
                FROM deliveries WHERE notification_key = $1::bigint
                ORDER BY position LIMIT \(limit) OFFSET \(offset)
                """, [key]).rows.compactMap { row -> Recipient? in
                guard let user = row.text(0), let state = row.text(1), let updated = row.text(4).flatMap(Double.init),
                      let position = row.integer(5) else { return nil }
                positions.append(position)
                return Recipient(user: user, state: state, attempts: row.integer(2) ?? 0, lastError: row.text(3),
                                 updatedAt: Date(timeIntervalSince1970: updated))
            }
            guard let first = positions.first, let last = positions.last else { return (total, Date(timeIntervalSince1970: sent), page) }
            var byPosition: [Int: [DeviceOutcome]] = [:]
            for row in try connection.query("""
                SELECT position, device_id, platform, app_id, token_masked, state, attempts, last_error, service_id,
                       extract(epoch FROM sent_at)::double precision, extract(epoch FROM updated_at)::double precision
                FROM device_pushes WHERE notification_key = $1::bigint AND position BETWEEN $2 AND $3
                ORDER BY position, device_row_id
                """, [key, String(first), String(last)]).rows {
                guard let position = row.integer(0), let device = row.text(1), let platform = row.text(2), let state = row.text(5),
                      let updated = row.text(10).flatMap(Double.init) else { continue }
                byPosition[position, default: []].append(DeviceOutcome(
                    deviceId: device, platform: platform, appId: row.text(3) ?? "", maskedToken: row.text(4) ?? "", state: state,
                    attempts: row.integer(6) ?? 0, lastError: row.text(7), serviceId: row.text(8),
                    sentAt: row.text(9).flatMap(Double.init).map(Date.init(timeIntervalSince1970:)), updatedAt: Date(timeIntervalSince1970: updated)))
            }
            for index in page.indices { page[index].devices = byPosition[positions[index]] ?? [] }
            return (total, Date(timeIntervalSince1970: sent), page)
        }
    }

    /// A subscribed device as the console shows it (the push token is for masking, never shown).
    package struct DeviceSummary: Sendable, Equatable {
        package var id: Int64
        package var bankClientId: String
        package var deviceId: String
        package var platform: String
        package var appId: String
        package var environment: String
        package var pushToken: String
        package var registeredAt: Date
        package var reachedAt: Date?
        /// The id of its key for confidential notifications, if it registered one.
        package var encryptionKeyId: String?
    }

    /// The user's subscribed devices (at most 100).
    package func devices(user: String) async throws -> [DeviceSummary] {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT d.id, d.bank_client_id, d.device_id, d.platform, d.app_id, d.environment, d.push_token,
                       extract(epoch FROM d.created_at)::double precision, extract(epoch FROM CASE WHEN r.reached THEN r.reached_at END)::double precision,
                       d.encryption_key_id
                FROM devices d LEFT JOIN device_reach r ON r.device_id = d.id
                WHERE d.\(identifiers.userColumn) = $1 ORDER BY d.id LIMIT 100
                """, [identifiers.comparable(user)]).rows.compactMap(Self.device)
        }
    }

    /// One of a user's notifications, as that user's delivery stands.
    package struct UserNotification: Sendable, Equatable {
        package var notificationId: String
        package var state: String
        package var attempts: Int
        package var sentAt: Date
        package var updatedAt: Date
    }

    /// The user's most recent notifications (at most `limit`, newest first), through the
    /// deliveries' index by user: each day's partition is read from the user's newest entry down.
    package func recentNotifications(user: String, limit: Int = 20) async throws -> [UserNotification] {
        let limit = max(1, min(limit, 100))
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT n.id, d.state, d.attempts, extract(epoch FROM n.created_at)::double precision,
                       extract(epoch FROM d.updated_at)::double precision
                FROM (SELECT notification_key, state, attempts, updated_at FROM deliveries
                      WHERE user_folded = lower($1) AND ($2::boolean OR user_id = $1)
                      ORDER BY notification_key DESC LIMIT \(limit)) AS d
                JOIN notifications n ON n.key = d.notification_key
                ORDER BY d.notification_key DESC
                """, [user, identifiers.caseInsensitive ? "true" : "false"]).rows.compactMap { row in
                guard let id = row.text(0), let state = row.text(1), let sent = row.text(3).flatMap(Double.init),
                      let updated = row.text(4).flatMap(Double.init) else { return nil }
                return UserNotification(notificationId: id, state: state, attempts: row.integer(2) ?? 0,
                                        sentAt: Date(timeIntervalSince1970: sent), updatedAt: Date(timeIntervalSince1970: updated))
            }
        }
    }

    /// A registration waiting for its SMS code.
    package struct PendingRegistration: Sendable, Equatable {
        package var bankClientId: String
        package var deviceId: String
        package var platform: String
        package var createdAt: Date
    }

    /// The user's registrations waiting for their SMS code (at most 100).
    package func pendingRegistrations(user: String) async throws -> [PendingRegistration] {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT bank_client_id, device_id, platform, extract(epoch FROM created_at)::double precision
                FROM pending_registrations WHERE user_folded = lower($1) AND ($2::boolean OR user_id = $1) ORDER BY id LIMIT 100
                """, [user, identifiers.caseInsensitive ? "true" : "false"]).rows.compactMap { row in
                guard let bank = row.text(0), let device = row.text(1), let platform = row.text(2),
                      let created = row.text(3).flatMap(Double.init) else { return nil }
                return PendingRegistration(bankClientId: bank, deviceId: device, platform: platform, createdAt: Date(timeIntervalSince1970: created))
            }
        }
    }

    /// Deletes a device, and with it its bearer token and push token; the device as it was, or
    /// nil when there is no such device.
    /// `reason`: why, as the user's page lists it among the removed devices.
    package func revoke(deviceId: Int64, reason: String = "revoked in the console") async throws -> (user: String, device: DeviceSummary)? {
        try await pool.withConnection { connection in
            guard let row = try connection.query("""
                WITH gone AS (DELETE FROM devices WHERE id = $1 RETURNING *), \(RemovedDevices.noted(reason: "$2"))
                SELECT g.id, g.bank_client_id, g.device_id, g.platform, g.app_id, g.environment, g.push_token,
                       extract(epoch FROM g.created_at)::double precision, NULL::double precision, NULL::text, g.user_id
                FROM gone g
                """, [String(deviceId), String(reason.prefix(300))]).rows.first, let device = Self.device(row), let user = row.text(10) else { return nil }
            return (user, device)
        }
    }

    /// A device removed: when and why.
    package struct RemovedDevice: Sendable, Equatable {
        package var deviceId: String
        package var platform: String
        package var appId: String
        /// Shortened when written.
        package var maskedToken: String
        package var reason: String
        package var removedAt: Date
    }

    /// The user's devices removed within the retention period, newest first (at most 50).
    package func removedDevices(user: String) async throws -> [RemovedDevice] {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT device_id, platform, app_id, token_masked, reason, extract(epoch FROM removed_at)::double precision
                FROM removed_devices WHERE user_folded = $1 AND ($2 OR user_id = $3)
                ORDER BY removed_at DESC LIMIT 50
                """, [user.lowercased(), identifiers.caseInsensitive ? "true" : "false", user]).rows.compactMap { row -> RemovedDevice? in
                guard let device = row.text(0), let platform = row.text(1), let reason = row.text(4),
                      let removed = row.text(5).flatMap(Double.init) else { return nil }
                return RemovedDevice(deviceId: device, platform: platform, appId: row.text(2) ?? "", maskedToken: row.text(3) ?? "",
                                     reason: reason, removedAt: Date(timeIntervalSince1970: removed))
            }
        }
    }

    /// A report waiting for the bank.
    package struct WaitingReport: Sendable, Equatable {
        package var id: Int64
        package var kind: String
        package var subject: String
        package var concerned: [String]
        package var attempts: Int
        package var nextAttemptAt: Date
        package var lastError: String?
        package var createdAt: Date
    }

    /// A page of the reports waiting for the bank, oldest first, and how many wait.
    package func waitingReports(offset: Int, limit: Int) async throws -> (total: Int, page: [WaitingReport]) {
        let limit = max(1, min(limit, 500)), offset = max(0, offset)
        return try await pool.withConnection(idempotent: true) { connection in
            let total = try connection.query("SELECT count(*) FROM outbox").scalar.flatMap(Int.init) ?? 0
            let page = try connection.query("""
                SELECT id, kind, payload::text, attempts, extract(epoch FROM next_attempt_at)::double precision, last_error,
                       extract(epoch FROM created_at)::double precision
                FROM outbox ORDER BY id LIMIT \(limit) OFFSET \(offset)
                """).rows.compactMap { row -> WaitingReport? in
                guard let id = row.text(0).flatMap(Int64.init), let kind = row.text(1), let payload = row.text(2),
                      let report = BankReport(kind: kind, payload: payload), let next = row.text(4).flatMap(Double.init),
                      let created = row.text(6).flatMap(Double.init) else { return nil }
                return WaitingReport(id: id, kind: kind, subject: report.subject, concerned: report.concerned, attempts: row.integer(3) ?? 0,
                                     nextAttemptAt: Date(timeIntervalSince1970: next), lastError: row.text(5),
                                     createdAt: Date(timeIntervalSince1970: created))
            }
            return (total, page)
        }
    }

    private static func device(_ row: [String?]) -> DeviceSummary? {
        guard let id = row.text(0).flatMap(Int64.init), let bank = row.text(1), let device = row.text(2), let platform = row.text(3),
              let app = row.text(4), let environment = row.text(5), let token = row.text(6),
              let created = row.text(7).flatMap(Double.init) else { return nil }
        return DeviceSummary(id: id, bankClientId: bank, deviceId: device, platform: platform, appId: app, environment: environment,
                             pushToken: token, registeredAt: Date(timeIntervalSince1970: created),
                             reachedAt: row.text(8).flatMap(Double.init).map(Date.init(timeIntervalSince1970:)), encryptionKeyId: row.text(9))
    }
}
