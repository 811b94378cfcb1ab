import Foundation

/// What the bank's `startActivity` did.
package enum ActivityStartOutcome: Sendable, Equatable {
    /// Each recipient's state, in the order sent.
    case started([(user: String, state: ActivityRecipientState)])
    case duplicate

    package static func == (lhs: ActivityStartOutcome, rhs: ActivityStartOutcome) -> Bool {
        switch (lhs, rhs) {
        case (.duplicate, .duplicate): true
        case (.started(let a), .started(let b)): a.map(\.user) == b.map(\.user) && a.map(\.state) == b.map(\.state)
        default: false
        }
    }
}

/// What an update or end did.
package enum ActivityEventOutcome: Sendable, Equatable {
    /// Pushes queued (or waiting for an update token), one per device the activity reaches.
    case queued(devices: Int)
    case notFound
    case ended
}

/// What the phone's update token call did.
package enum ActivityTokenOutcome: Sendable, Equatable {
    case saved
    /// The activity does not reach this device.
    case notFound
    case ended
}
