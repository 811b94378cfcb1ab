import Foundation
import PigeonDomain

/// The overview page: the database, the queue's and the outbox's gauges, the push connections,
/// the listeners' certificates and the last hour's pushes.
package struct ConsoleOverview: Sendable {
    package var database: String
    package var databaseUp: Bool
    package var queueDepth: Double?
    package var oldestDueSeconds: Double?
    package var outboxDepth: Double?
    package var outboxOldestSeconds: Double?
    package var deadReports: Double?
    package var connections: [(service: String, app: String, opened: Int, restarted: Int)]
    /// Each HTTPS listener (`listen`, `bankListen`) and when the certificate it presents expires.
    package var certificates: [(listener: String, expiry: Date?)]
    package var minutes: [PushActivity.Minute]

    package init(database: String, databaseUp: Bool, queueDepth: Double? = nil, oldestDueSeconds: Double? = nil,
                 outboxDepth: Double? = nil, outboxOldestSeconds: Double? = nil, deadReports: Double? = nil,
                 connections: [(service: String, app: String, opened: Int, restarted: Int)] = [],
                 certificates: [(listener: String, expiry: Date?)] = [], minutes: [PushActivity.Minute] = []) {
        self.database = database
        self.databaseUp = databaseUp
        self.queueDepth = queueDepth
        self.oldestDueSeconds = oldestDueSeconds
        self.outboxDepth = outboxDepth
        self.outboxOldestSeconds = outboxOldestSeconds
        self.deadReports = deadReports
        self.connections = connections
        self.certificates = certificates
        self.minutes = minutes
    }
}

/// A notification and one page of its recipients.
package struct ConsoleNotificationView: Sendable {
    package var notification: PushNotification
    package var total: Int
    package var sentAt: Date
    package var recipients: [ConsoleRows.Recipient]

    package init(notification: PushNotification, total: Int, sentAt: Date, recipients: [ConsoleRows.Recipient]) {
        self.notification = notification
        self.total = total
        self.sentAt = sentAt
        self.recipients = recipients
    }
}

/// What the console knows of one user.
package struct ConsoleUserView: Sendable {
    package var devices: [ConsoleRows.DeviceSummary]
    package var pending: [ConsoleRows.PendingRegistration]
    package var recent: [ConsoleRows.UserNotification]
    package var removed: [ConsoleRows.RemovedDevice]

    package init(devices: [ConsoleRows.DeviceSummary], pending: [ConsoleRows.PendingRegistration] = [],
                 recent: [ConsoleRows.UserNotification] = [], removed: [ConsoleRows.RemovedDevice] = []) {
        self.devices = devices
        self.pending = pending
        self.recent = recent
        self.removed = removed
    }
}

/// One page of the reports waiting for the bank, and the dead letters.
package struct ConsoleOutboxView: Sendable {
    package var page: Int
    package var total: Int
    package var waiting: [ConsoleRows.WaitingReport]
    package var dead: [DeadReport]

    package init(page: Int, total: Int, waiting: [ConsoleRows.WaitingReport], dead: [DeadReport]) {
        self.page = page
        self.total = total
        self.waiting = waiting
        self.dead = dead
    }
}
