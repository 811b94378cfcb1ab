import Foundation

// What the device API and its stores say about devices: the seam's vocabulary, apart from
// any store.

/// A device's identity as the app states it when registering: who, which device, which platform
/// and app — a phone with two of the bank's apps is two devices — and the APNs environment its
/// token belongs to.
package struct DeviceIdentity: Sendable, Equatable {
    package var bankClientId: String
    package var userId: String
    package var deviceId: String
    package var platform: Platform
    /// A configured app's name (``PushRoute/defaultApp`` for the top-level keys).
    package var appId: String
    package var environment: PushEnvironment

    package init(bankClientId: String, userId: String, deviceId: String, platform: Platform,
                appId: String = PushRoute.defaultApp, environment: PushEnvironment = .production) {
        self.bankClientId = bankClientId
        self.userId = userId
        self.deviceId = deviceId
        self.platform = platform
        self.appId = appId
        self.environment = environment
    }
}

/// A registration waiting for its SMS code: the device, its push token and its encryption key.
package struct PendingRegistration: Sendable, Equatable {
    package var identity: DeviceIdentity
    package var pushToken: String
    package var encryptionKey: DeviceEncryptionKey?

    package init(identity: DeviceIdentity, pushToken: String, encryptionKey: DeviceEncryptionKey?) {
        self.identity = identity
        self.pushToken = pushToken
        self.encryptionKey = encryptionKey
    }
}

/// A device an authentication token belongs to.
package struct AuthenticatedDevice: Sendable, Equatable {
    package var id: Int64
    package var userId: String
    /// The device as it registered (user id as stored).
    package var identity: DeviceIdentity

    package init(id: Int64, userId: String, identity: DeviceIdentity) {
        self.id = id
        self.userId = userId
        self.identity = identity
    }
}

/// What a registration does to a device's encryption key (CONTRACT §8).
package enum EncryptionKeyUpdate: Sendable, Equatable {
    /// The member was absent: a refresh keeps the key (a new subscription has none).
    case keep
    /// `null`: the key is removed.
    case remove
    case replace(DeviceEncryptionKey)

    /// The key a new subscription gets.
    package var newKey: DeviceEncryptionKey? {
        if case .replace(let key) = self { return key }
        return nil
    }
}

/// An authentication token as stored: its SHA-256 digest and when it stops working.
package struct StoredToken: Sendable {
    package var digest: Data
    package var expiresAt: Date

    package init(digest: Data, expiresAt: Date) {
        self.digest = digest
        self.expiresAt = expiresAt
    }

}
