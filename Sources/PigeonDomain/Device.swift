/// A device registered for pushes.
public struct Device: Sendable, Equatable {
    public var id: Int64
    public var bankClientId: String
    public var userId: String
    public var deviceId: String
    public var platform: Platform
    public var pushToken: String
    /// The app it registered for (``PushRoute/defaultApp``: the top-level keys).
    public var appId: String
    /// The APNs environment of its token (always production for other platforms).
    public var environment: PushEnvironment
    /// The key its confidential notifications are sealed to, if it registered one.
    public var encryptionKey: DeviceEncryptionKey?

    public init(id: Int64, bankClientId: String, userId: String, deviceId: String, platform: Platform, pushToken: String,
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
    public var route: PushRoute {
        PushRoute(platform: platform, appId: appId, environment: platform == .ios ? environment : .production)
    }
}
