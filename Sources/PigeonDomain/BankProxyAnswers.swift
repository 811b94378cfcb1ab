import Foundation

// What the device API asks of the bank proxy and how a call can fail: the seam's vocabulary,
// apart from the SOAP client (BankProxy) that speaks it.

/// Who asks to subscribe: the fields of `checkSubscriptionAuthorized` and `authorizeSubscription`.
package struct SubscriptionRequest: Sendable, Equatable {
    package var bankClientId: String
    package var userId: String
    package var deviceId: String
    /// The device's platform (`IOS`, `ANDROID`, `RUSTORE`, `HUAWEI`, `WEB`).
    package var platform: String

    package init(bankClientId: String, userId: String, deviceId: String, platform: String) {
        self.bankClientId = bankClientId
        self.userId = userId
        self.deviceId = deviceId
        self.platform = platform
    }
}

/// Why a call to the bank proxy did not succeed.
package struct BankProxyError: Error, CustomStringConvertible, Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// The bank answered `BankClientNotExistsException`: the bank client id is unknown.
        case bankClientNotExists
        /// The bank could not be reached, timed out, or answered with a server error or fault.
        case unavailable
        /// The bank answered something that is not the expected SOAP response.
        case invalidAnswer
    }

    package var kind: Kind
    /// What happened, for logs and error responses (never contains secrets).
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { "bank proxy \(kind): \(message)" }
}
