/// A configuration problem, naming where it was found: `server.conf:12` or
/// `environment variable PIGEON_DBURL`.
package struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    package var location: String
    package var message: String

    package init(location: String, message: String) {
        self.location = location
        self.message = message
    }

    package var description: String { "\(location): \(message)" }
}
