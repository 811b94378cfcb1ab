import Foundation
import PigeonDomain
import PushCore

/// Seals a confidential notification's content to one device key (CONTRACT §8, format `v1`:
/// a fresh ephemeral key and salt each time). The gateway's seals with OpenSSL (PigeonCrypto).
package protocol ContentSealing: Sendable {
    func seal(_ content: Data, to key: DeviceEncryptionKey, notificationId: String) throws -> E2EEnvelope
}

/// How the engine pushes confidential notifications: the neutral alert shown until the app
/// replaces it, and the sealer (`nil`: every device is told to fetch the content).
package struct ConfidentialPushing: Sendable {
    package static let defaultAlertText = "New secure message"

    package var sealer: (any ContentSealing)?
    package var alertText: String

    package init(sealer: (any ContentSealing)?, alertText: String = ConfidentialPushing.defaultAlertText) {
        self.sealer = sealer
        self.alertText = alertText
    }
}
