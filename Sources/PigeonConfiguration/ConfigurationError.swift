/// A configuration problem, naming where it was found: `server.conf:12` or
/// `environment variable PIGEON_DBURL`.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public var location: String
    public var message: String

    public init(location: String, message: String) {
        self.location = location
        self.message = message
    }

    public var description: String { "\(location): \(message)" }
}
