import Foundation

/// A Wallet pass by its identity in Apple's web service: the pass type identifier (the topic its
/// update pushes go to) and the serial number, unique within the pass type.
package struct PassIdentity: Hashable, Sendable, CustomStringConvertible {
    package var passTypeIdentifier: String
    package var serialNumber: String

    package init(passTypeIdentifier: String, serialNumber: String) {
        self.passTypeIdentifier = passTypeIdentifier
        self.serialNumber = serialNumber
    }

    package var description: String { "\(passTypeIdentifier)/\(serialNumber)" }
}

/// Where one registered device stands with the current version of a pass (CONTRACT §7).
///
/// `QUEUED → SENT → FETCHED`; a device not fetching within `passFetchTimeoutSeconds` is pushed
/// again, and after `passFetchRetries` more pushes it is `EXPIRED` (reported to the bank). A push
/// the service refuses for good (a topic our certificate does not cover) ends `SENDING_FAILED`.
/// `REGISTERED`: the device registered and no version has been pushed to it since. A fetch,
/// however late, makes any of them `FETCHED`.
package enum PassDeliveryState: String, Sendable, CaseIterable, Codable {
    case registered = "REGISTERED"
    case queued = "QUEUED"
    case sent = "SENT"
    case fetched = "FETCHED"
    case expired = "EXPIRED"
    case sendingFailed = "SENDING_FAILED"

    /// True while the gateway still has something to do for the device (push, or wait for its fetch).
    package var isPending: Bool { self == .queued || self == .sent }
}

/// The shapes Apple's web service and the bank's pass operations accept, checked before anything
/// is looked up or stored: every value comes from a phone or from a SOAP request.
package enum PassFields {
    /// Pass type identifiers, serial numbers and device library identifiers are at most this long.
    package static let maximumIdentifierLength = 128
    /// `authenticationToken` is at least 16 characters (Apple's rule) and at most this many.
    package static let maximumAuthenticationTokenLength = 256
    /// APNs device tokens are hexadecimal, at most this long.
    package static let maximumPushTokenLength = 200

    private static let identifierCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-~:")

    /// Why `value` cannot be an identifier in a web-service path (pass type, serial number,
    /// device library identifier), or nil: 1–128 of letters, digits and `. _ - ~ :`.
    package static func identifierProblem(_ value: String, name: String) -> String? {
        guard !value.isEmpty else { return "\(name) is empty" }
        guard value.utf8.count <= maximumIdentifierLength else { return "\(name) is longer than \(maximumIdentifierLength) characters" }
        guard value.allSatisfy(identifierCharacters.contains) else {
            return "\(name) may contain only letters, digits and . _ - ~ :"
        }
        return nil
    }

    /// Why `value` cannot be a pass's authentication token, or nil: 16–256 printable ASCII
    /// characters without spaces (it travels in an `Authorization` header).
    package static func authenticationTokenProblem(_ value: String) -> String? {
        guard value.utf8.count >= 16 else { return "authenticationToken must be at least 16 characters" }
        guard value.utf8.count <= maximumAuthenticationTokenLength else {
            return "authenticationToken is longer than \(maximumAuthenticationTokenLength) characters"
        }
        guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "authenticationToken may contain only printable ASCII characters without spaces"
        }
        return nil
    }

    /// Whether `value` is an APNs device token: 1–200 hexadecimal digits.
    package static func isPushToken(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumPushTokenLength && value.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
        }
    }
}
