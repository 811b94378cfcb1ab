import Foundation
import PigeonDomain

// The device API's seams: what ``DeviceEndpoint`` asks of the database and of the bank, as the
// delivery engine has its own. PostgreSQL's stores and the bank proxy's client conform where
// the gateway is composed; tests use the in-memory fakes of `PigeonTestSupport`.

/// Devices as registration, verification and bearer tokens see them (in PostgreSQL, `DeviceRegistry`).
package protocol DeviceRegistering: Sendable {
    /// The device a bearer token's digest belongs to, while the token is valid.
    func authenticate(digest: Data) async throws -> AuthenticatedDevice?
    /// A known device's new push token, bearer token and encryption key.
    func refresh(device id: Int64, pushToken: String, environment: PushEnvironment, token: StoredToken,
                 encryptionKey: EncryptionKeyUpdate) async throws
    /// Subscribes a device the bank allowed; `override` replaces the user's other devices.
    @discardableResult
    func subscribe(_ identity: DeviceIdentity, pushToken: String, token: StoredToken, override: Bool,
                   encryptionKey: DeviceEncryptionKey?) async throws -> Int64
    /// Keeps a registration that waits for its SMS code (the newest `keep` per device).
    func savePending(_ identity: DeviceIdentity, pushToken: String, registrationDigest: Data, keep: Int,
                     encryptionKey: DeviceEncryptionKey?) async throws
    /// The waiting registration whose id has this digest, for this device.
    func pending(registrationDigest: Data, bankClientId: String, userId: String, deviceId: String) async throws -> PendingRegistration?
    /// Forgets a device's waiting registrations.
    func dropPending(bankClientId: String, userId: String, deviceId: String) async throws
}

/// The app's acknowledgements and the notification details it may read (in PostgreSQL, `AcknowledgementStore`).
package protocol AcknowledgementRecording: Sendable {
    func acknowledge(notificationId: String, user: String, device: Int64, target: DeliveryState) async throws -> AcknowledgementResult
    func notification(id: String, user: String) async throws -> NotificationLookup
}

/// Counters shared by every gateway process (in PostgreSQL, `RateLimitStore`).
package protocol RateLimitCounting: Sendable {
    func take(bucket: String, limit: Int, window: Duration) async throws -> RateLimitDecision
}

/// A phone's Live Activity tokens (in PostgreSQL, `ActivityStore`).
package protocol ActivityTokenRecording: Sendable {
    /// False when the device already has tokens for the most activity types allowed.
    func saveStartToken(deviceRowId: Int64, activityType: String, token: String) async throws -> Bool
    func saveUpdateToken(activityId: String, deviceRowId: Int64, token: String) async throws -> ActivityTokenOutcome
    /// False when the activity was never started on this device.
    func endedOnDevice(activityId: String, deviceRowId: Int64) async throws -> Bool
}

/// The bank's answers about a new device (CONTRACT §3, PostgreSQL's `BankProxyClient`).
package protocol SubscriptionAuthorizing: Sendable {
    /// Whether the bank allows the device without a code.
    func checkSubscriptionAuthorized(_ request: SubscriptionRequest) async throws(BankProxyError) -> Bool
    /// Whether the bank started authorizing it (an SMS code is on its way).
    func authorizeSubscription(_ request: SubscriptionRequest) async throws(BankProxyError) -> Bool
    /// Whether the code is the one the bank sent.
    func verifySubscriptionAuthorization(bankClientId: String, userId: String, deviceId: String, code: String) async throws(BankProxyError) -> Bool
}
