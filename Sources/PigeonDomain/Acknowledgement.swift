import Foundation

/// What an app's acknowledgement came to.
package enum AcknowledgementResult: Sendable, Equatable {
    /// The user's delivery now stands at this state (unchanged when it was already there or
    /// further: acknowledgements are idempotent and never move a state backwards).
    case recorded(DeliveryState)
    /// The notification exists but was not addressed to this user.
    case notAddressed
    /// No such notification.
    case notFound
}

/// A notification looked up on behalf of a user.
package enum NotificationLookup: Sendable, Equatable {
    case found(PushNotification)
    case notAddressed
    case notFound
}
