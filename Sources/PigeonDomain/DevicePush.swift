import Foundation

/// What became of one device's push of a delivery, as the console and its JSON show it
/// (CONTRACT §5): which phone got the code, and why another did not.
package struct DevicePush: Sendable, Equatable {
    /// Where the push stands for this device.
    package enum State: String, Sendable, CaseIterable {
        /// The push service accepted it.
        case sent = "SENT"
        /// Failed for now; tried again at the delivery's next attempt.
        case retrying = "RETRYING"
        /// Failed for good (a refused payload, credentials, retries used up).
        case failed = "FAILED"
        /// The service declared the token dead; the device was removed.
        case invalidToken = "INVALID_TOKEN"
        /// Its time ran out before it could be pushed.
        case expired = "EXPIRED"
    }

    /// The device's row id at the time (the device may be removed since).
    package var deviceRowId: Int64
    /// The app's own id for the device.
    package var deviceId: String
    package var platform: Platform
    package var appId: String
    /// The push token shortened (PigeonCore's `Redaction.token(_:)`): never the whole token.
    package var maskedToken: String
    package var state: State
    package var error: String?
    /// The service's id for the push: APNs' `apns-id`, FCM's message name.
    package var serviceId: String?

    package init(deviceRowId: Int64, deviceId: String, platform: Platform, appId: String, maskedToken: String, state: State,
                error: String? = nil, serviceId: String? = nil) {
        self.deviceRowId = deviceRowId
        self.deviceId = deviceId
        self.platform = platform
        self.appId = appId
        self.maskedToken = maskedToken
        self.state = state
        self.error = error
        self.serviceId = serviceId
    }
}
