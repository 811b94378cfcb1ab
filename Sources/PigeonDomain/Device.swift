/// A device registered for pushes.
package struct Device: Sendable, Equatable {
    package var id: Int64
    package var bankClientId: String
    package var userId: String
    package var deviceId: String
    package var platform: Platform
    package var pushToken: String
    /// The app it registered for (``PushRoute/defaultApp``: the top-level keys).
    package var appId: String
    /// The APNs environment of its token (always production for other platforms).
    package var environment: PushEnvironment
    /// The key its confidential notifications are sealed to, if it registered one.
    package var encryptionKey: DeviceEncryptionKey?

    package init(id: Int64, bankClientId: String, userId: String, deviceId: String, platform: Platform, pushToken: String,
                appId: String = PushRoute.defaultApp, environment: PushEnvironment = .production, encryptionKey: DeviceEncryptionKey? = nil) {
        self.encryptionKey = encryptionKey
        self.id = id
        self.bankClientId = bankClientId
        self.userId = userId
        self.deviceId = deviceId
        self.platform = platform
        self.pushToken = pushToken
        self.appId = appId
        self.environment = environment
    }

    /// Where its pushes go. Only APNs has environments.
    package var route: PushRoute {
        PushRoute(platform: platform, appId: appId, environment: platform == .ios ? environment : .production)
    }
}
