/// A cryptographic operation failed; the description carries OpenSSL's reason, never key
/// material.
package struct CryptoError: Error, CustomStringConvertible, Equatable {
    package var operation: String
    package var reason: String

    package init(operation: String, reason: String) {
        self.operation = operation
        self.reason = reason
    }

    package var description: String { "\(operation): \(reason)" }
}
