import Foundation

/// A report moved out of the outbox after failing for too long.
package struct DeadReport: Sendable, Equatable {
    package var id: Int64
    package var kind: String
    /// The notification id, or the pass (`passTypeIdentifier/serialNumber`) a report is about.
    package var notificationId: String
    /// The users it names, or how many devices (a pass report).
    package var users: [String]
    package var attempts: Int
    package var lastError: String?
    package var createdAt: Date
    package var diedAt: Date
    /// Why an expiry report was written (timeout, reached nobody); nil for the other kinds.
    package var reason: ExpiryReason? = nil

    package init(id: Int64, kind: String, notificationId: String, users: [String], attempts: Int, lastError: String?, createdAt: Date,
                 diedAt: Date, reason: ExpiryReason? = nil) {
        self.id = id
        self.kind = kind
        self.notificationId = notificationId
        self.users = users
        self.attempts = attempts
        self.lastError = lastError
        self.createdAt = createdAt
        self.diedAt = diedAt
        self.reason = reason
    }
}
