/// Why a call to the bank proxy did not succeed.
public struct BankProxyError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The bank answered `BankClientNotExistsException`: the bank client id is unknown.
        case bankClientNotExists
        /// The bank could not be reached, timed out, or answered with a server error or fault.
        case unavailable
        /// The bank answered something that is not the expected SOAP response.
        case invalidAnswer
    }

    public var kind: Kind
    /// What happened, for logs and error responses (never contains secrets).
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "bank proxy \(kind): \(message)" }
}
