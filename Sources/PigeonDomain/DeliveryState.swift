/// Where one recipient's copy of a notification stands.
///
/// The happy path is `QUEUED → SENT → DELIVERED → READ`; `SENDING_FAILED`,
/// `INVALID_SUBSCRIPTION` and `EXPIRED` end it early. A state never moves backwards: see
/// ``canAdvance(to:)``.
package enum DeliveryState: String, Sendable, CaseIterable, Codable {
    case queued = "QUEUED"
    case sent = "SENT"
    case delivered = "DELIVERED"
    case read = "READ"
    case sendingFailed = "SENDING_FAILED"
    case invalidSubscription = "INVALID_SUBSCRIPTION"
    case expired = "EXPIRED"

    /// True once nothing more will happen to the delivery.
    package var isFinal: Bool {
        switch self {
        case .read, .expired, .invalidSubscription: true
        case .queued, .sent, .delivered, .sendingFailed: false
        }
    }

    /// True for the states that end a delivery without any device reached (CONTRACT §10: the
    /// bank is told at once when this happens within the timeout).
    package var reachedNobody: Bool {
        self == .invalidSubscription || self == .sendingFailed
    }

    /// Whether a confidential notification's content may go once every recipient is here
    /// (CONTRACT §8): read, expired, never deliverable, or failed for good. (SENDING_FAILED may
    /// still see a late acknowledgement, which needs no content.)
    package var erasesConfidentialContent: Bool {
        switch self {
        case .read, .expired, .invalidSubscription, .sendingFailed: true
        case .queued, .sent, .delivered: false
        }
    }

    /// Whether a delivery in this state may move to `next`.
    ///
    /// - The push services and the sweep move `QUEUED` forward to `SENT`, `SENDING_FAILED`,
    ///   `INVALID_SUBSCRIPTION` or `EXPIRED`, and `SENT` to `EXPIRED`.
    /// - The app's acknowledgements move anything not final forward to `DELIVERED` and `READ`
    ///   (an `opened` before `delivered` lands on `READ`; an ack proves a failed send arrived).
    /// - Staying in the same state is not a move.
    package func canAdvance(to next: DeliveryState) -> Bool {
        guard self != next, !isFinal else { return false }
        switch next {
        case .queued:
            return false
        case .sent, .sendingFailed, .invalidSubscription:
            return self == .queued
        case .expired:
            return self == .queued || self == .sent || self == .sendingFailed
        case .delivered:
            return self == .queued || self == .sent || self == .sendingFailed
        case .read:
            return true
        }
    }
}
