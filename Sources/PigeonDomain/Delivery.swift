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
    /// The devices still to push: `nil` for every subscribed device of the user (the first
    /// attempt), else the ones whose earlier pushes failed temporarily.
    public var pendingDevices: [Int64]?
    /// True when a device already accepted the push (the delivery is SENT and in the queue
    /// only for its other devices).
    public var alreadySent: Bool
    /// The notification's priority (higher first; at or above the urgent priority: the urgent lane).
    public var priority: Int

    public init(notificationKey: Int64, userId: String, userFolded: String, position: Int, attempt: Int, expiresAt: Date,
                pendingDevices: [Int64]? = nil, alreadySent: Bool = false, priority: Int = 0) {
        self.priority = priority
        self.notificationKey = notificationKey
        self.userId = userId
        self.userFolded = userFolded
        self.position = position
        self.attempt = attempt
        self.expiresAt = expiresAt
        self.pendingDevices = pendingDevices
        self.alreadySent = alreadySent
    }
}

/// What became of one claimed delivery.
public struct DeliveryResult: Sendable, Equatable {
    public var delivery: ClaimedDelivery
    public var state: DeliveryState
    /// For a delivery staying in the queue (QUEUED, or SENT with devices to retry): when to
    /// try again.
    public var nextAttemptAt: Date?
    /// The devices to push at that next attempt.
    public var pendingDevices: [Int64]
    public var error: String?
    /// Each pushed device's outcome of this attempt (kept per device for the console).
    public var devices: [DevicePush]

    public init(delivery: ClaimedDelivery, state: DeliveryState, nextAttemptAt: Date? = nil, pendingDevices: [Int64] = [],
                error: String? = nil, devices: [DevicePush] = []) {
        self.devices = devices
        self.delivery = delivery
        self.state = state
        self.nextAttemptAt = nextAttemptAt
        self.pendingDevices = pendingDevices
        self.error = error
    }
}

/// The priorities one claim takes: the urgent lane's (at or above a threshold), the others, or all.
public enum PriorityBand: Sendable, Hashable, CustomStringConvertible {
    case all
    case atLeast(Int)
    case below(Int)

    public func contains(_ priority: Int) -> Bool {
        switch self {
        case .all: true
        case .atLeast(let lowest): priority >= lowest
        case .below(let bound): priority < bound
        }
    }

    public var description: String {
        switch self {
        case .all: "all"
        case .atLeast(let lowest): "priority >= \(lowest)"
        case .below(let bound): "priority < \(bound)"
        }
    }
}
