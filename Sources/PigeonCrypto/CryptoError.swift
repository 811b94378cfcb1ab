/// A cryptographic operation failed; the description carries OpenSSL's reason, never key
/// material.
public struct CryptoError: Error, CustomStringConvertible, Equatable {
    public var operation: String
    public var reason: String

    public init(operation: String, reason: String) {
        self.operation = operation
        self.reason = reason
    }

    public var description: String { "\(operation): \(reason)" }
}
