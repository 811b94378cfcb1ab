import Foundation

/// The rows the operator console shows (CONTRACT §5, §10), as its store reads them from
/// PostgreSQL and the unit tier's fake builds them.
package enum ConsoleRows {
    /// One recipient of a notification, with what became of each of its devices' pushes.
    package struct Recipient: Sendable, Equatable {
        package var user: String
        package var state: String
        package var attempts: Int
        package var lastError: String?
        package var updatedAt: Date
        /// When the bank was told at once that this recipient reached nobody (CONTRACT §10).
        package var reportedEarlyAt: Date? = nil
        package var devices: [DeviceOutcome] = []

        package init(user: String, state: String, attempts: Int, lastError: String? = nil, updatedAt: Date, reportedEarlyAt: Date? = nil, devices: [DeviceOutcome] = []) {
            self.user = user
            self.state = state
            self.attempts = attempts
            self.lastError = lastError
            self.updatedAt = updatedAt
            self.reportedEarlyAt = reportedEarlyAt
            self.devices = devices
        }
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
        /// When the app on this device acknowledged receiving it, and opening it (CONTRACT §10).
        package var deliveredAt: Date? = nil
        package var openedAt: Date? = nil

        package init(deviceId: String, platform: String, appId: String, maskedToken: String, state: String, attempts: Int, lastError: String? = nil, serviceId: String? = nil, sentAt: Date? = nil, updatedAt: Date, deliveredAt: Date? = nil, openedAt: Date? = nil) {
            self.deviceId = deviceId
            self.platform = platform
            self.appId = appId
            self.maskedToken = maskedToken
            self.state = state
            self.attempts = attempts
            self.lastError = lastError
            self.serviceId = serviceId
            self.sentAt = sentAt
            self.updatedAt = updatedAt
            self.deliveredAt = deliveredAt
            self.openedAt = openedAt
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

        package init(id: Int64, bankClientId: String, deviceId: String, platform: String, appId: String, environment: String, pushToken: String, registeredAt: Date, reachedAt: Date? = nil, encryptionKeyId: String? = nil) {
            self.id = id
            self.bankClientId = bankClientId
            self.deviceId = deviceId
            self.platform = platform
            self.appId = appId
            self.environment = environment
            self.pushToken = pushToken
            self.registeredAt = registeredAt
            self.reachedAt = reachedAt
            self.encryptionKeyId = encryptionKeyId
        }
    }

    /// One of a user's notifications, as that user's delivery stands.
    package struct UserNotification: Sendable, Equatable {
        package var notificationId: String
        package var state: String
        package var attempts: Int
        package var sentAt: Date
        package var updatedAt: Date

        package init(notificationId: String, state: String, attempts: Int, sentAt: Date, updatedAt: Date) {
            self.notificationId = notificationId
            self.state = state
            self.attempts = attempts
            self.sentAt = sentAt
            self.updatedAt = updatedAt
        }
    }

    /// A registration waiting for its SMS code.
    package struct PendingRegistration: Sendable, Equatable {
        package var bankClientId: String
        package var deviceId: String
        package var platform: String
        package var createdAt: Date

        package init(bankClientId: String, deviceId: String, platform: String, createdAt: Date) {
            self.bankClientId = bankClientId
            self.deviceId = deviceId
            self.platform = platform
            self.createdAt = createdAt
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

        package init(deviceId: String, platform: String, appId: String, maskedToken: String, reason: String, removedAt: Date) {
            self.deviceId = deviceId
            self.platform = platform
            self.appId = appId
            self.maskedToken = maskedToken
            self.reason = reason
            self.removedAt = removedAt
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

        package init(id: Int64, kind: String, subject: String, concerned: [String], attempts: Int, nextAttemptAt: Date, lastError: String? = nil, createdAt: Date) {
            self.id = id
            self.kind = kind
            self.subject = subject
            self.concerned = concerned
            self.attempts = attempts
            self.nextAttemptAt = nextAttemptAt
            self.lastError = lastError
            self.createdAt = createdAt
        }
    }
}
