import Foundation

/// A delivery a worker holds under lease: who to reach, with what, and how often it was tried.
public struct ClaimedDelivery: Sendable, Equatable {
    /// The storage key of the notification (its send day in the high bits).
    public var notificationKey: Int64
    public var userId: String
    public var userFolded: String
    public var position: Int
    /// Attempts including this one.
    public var attempt: Int
    public var expiresAt: Date

    public init(notificationKey: Int64, userId: String, userFolded: String, position: Int, attempt: Int, expiresAt: Date) {
        self.notificationKey = notificationKey
        self.userId = userId
        self.userFolded = userFolded
        self.position = position
        self.attempt = attempt
        self.expiresAt = expiresAt
    }
}

/// What became of one claimed delivery.
public struct DeliveryResult: Sendable, Equatable {
    public var delivery: ClaimedDelivery
    public var state: DeliveryState
    /// For a delivery staying QUEUED: when to try again.
    public var nextAttemptAt: Date?
    public var error: String?

    public init(delivery: ClaimedDelivery, state: DeliveryState, nextAttemptAt: Date? = nil, error: String? = nil) {
        self.delivery = delivery
        self.state = state
        self.nextAttemptAt = nextAttemptAt
        self.error = error
    }
}
