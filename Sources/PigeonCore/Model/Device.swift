/// A device registered for pushes.
public struct Device: Sendable, Equatable {
    public var id: Int64
    public var bankClientId: String
    public var userId: String
    public var deviceId: String
    public var platform: Platform
    public var pushToken: String

    public init(id: Int64, bankClientId: String, userId: String, deviceId: String, platform: Platform, pushToken: String) {
        self.id = id
        self.bankClientId = bankClientId
        self.userId = userId
        self.deviceId = deviceId
        self.platform = platform
        self.pushToken = pushToken
    }
}
