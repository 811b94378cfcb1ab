import Foundation

/// A delivery a worker holds under lease: who to reach, with what, and how often it was tried.
package struct ClaimedDelivery: Sendable, Equatable {
    /// The storage key of the notification (its send day in the high bits).
    package var notificationKey: Int64
    package var userId: String
    package var userFolded: String
    package var position: Int
    /// Attempts including this one.
    package var attempt: Int
    package var expiresAt: Date
    /// The devices still to push: `nil` for every subscribed device of the user (the first
    /// attempt), else the ones whose earlier pushes failed temporarily.
    package var pendingDevices: [Int64]?
    /// True when a device already accepted the push (the delivery is SENT and in the queue
    /// only for its other devices).
    package var alreadySent: Bool
    /// The notification's priority (higher first; at or above the urgent priority: the urgent lane).
    package var priority: Int
    /// The lease the claim took it under (the store's id; 0 where a store keeps no lease rows):
    /// its outcome or hand-back is written through it.
    package var lease: Int64

    package init(notificationKey: Int64, userId: String, userFolded: String, position: Int, attempt: Int, expiresAt: Date,
                pendingDevices: [Int64]? = nil, alreadySent: Bool = false, priority: Int = 0, lease: Int64 = 0) {
        self.priority = priority
        self.lease = lease
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
package struct DeliveryResult: Sendable, Equatable {
    package var delivery: ClaimedDelivery
    package var state: DeliveryState
    /// For a delivery staying in the queue (QUEUED, or SENT with devices to retry): when to
    /// try again.
    package var nextAttemptAt: Date?
    /// The devices to push at that next attempt.
    package var pendingDevices: [Int64]
    package var error: String?
    /// Each pushed device's outcome of this attempt (kept per device for the console).
    package var devices: [DevicePush]

    package init(delivery: ClaimedDelivery, state: DeliveryState, nextAttemptAt: Date? = nil, pendingDevices: [Int64] = [],
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
package enum PriorityBand: Sendable, Hashable, CustomStringConvertible {
    case all
    case atLeast(Int)
    case below(Int)

    package func contains(_ priority: Int) -> Bool {
        switch self {
        case .all: true
        case .atLeast(let lowest): priority >= lowest
        case .below(let bound): priority < bound
        }
    }

    package var description: String {
        switch self {
        case .all: "all"
        case .atLeast(let lowest): "priority >= \(lowest)"
        case .below(let bound): "priority < \(bound)"
        }
    }
}
