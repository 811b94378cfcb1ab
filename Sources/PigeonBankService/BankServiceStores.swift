import Foundation
import PigeonDomain

// The bank's SOAP service's seams: what ``InboundEndpoint`` asks of the database. PostgreSQL's
// stores conform where the gateway is composed; tests use the in-memory fakes of
// `PigeonTestSupport`.

/// Notifications as the bank sends and looks them up (in PostgreSQL, `NotificationStore`).
package protocol NotificationRecording: Sendable {
    /// Stores a notification and its deliveries, or tells it is a duplicate of a stored one.
    func send(_ notification: PushNotification) async throws -> SendOutcome
    /// A stored notification (with its recipients), or nil.
    func notification(id: String, recipients: Bool) async throws -> PushNotification?
    /// Each recipient's state, or nil for an unknown notification.
    func deliveryStatus(id: String) async throws -> [RecipientState]?
}

/// The bank's view of its users' subscriptions (in PostgreSQL, `SubscriptionStore`).
package protocol SubscriptionKeeping: Sendable {
    /// Deletes every device of `user`: how many there were.
    func deleteAll(user: String) async throws -> Int
    /// Whether each user has at least one device.
    func exist(users: [String]) async throws -> [Bool]
}

/// Wallet passes as the bank updates them (in PostgreSQL, `PassStore`).
package protocol PassKeeping: Sendable {
    func update(_ pass: PassIdentity, authenticationDigest: Data, content: Data) async throws -> PassUpdateResult
    func status(_ pass: PassIdentity) async throws -> (version: Int64, devices: [(device: String, state: PassDeliveryState)])?
}

/// Live Activities and widget refreshes as the bank starts and moves them (in PostgreSQL, `ActivityStore`).
package protocol ActivityKeeping: Sendable {
    func start(_ start: ActivityStart, now: Date) async throws -> ActivityStartOutcome
    func event(activityId: String, kind: ActivityPushKind, content: ActivityContent, now: Date) async throws -> ActivityEventOutcome
    func status(activityId: String) async throws -> [(user: String, state: ActivityRecipientState)]?
    func refreshWidgets(users: [String]) async throws -> [(user: String, devices: Int)]
    /// Queues a controls refresh for every subscribed iPhone of `users`.
    func refreshControls(users: [String]) async throws -> [(user: String, devices: Int)]
}
