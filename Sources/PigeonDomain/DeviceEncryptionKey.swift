import Foundation

/// A device's key for confidential notifications (CONTRACT §8): its id and its P-256 public
/// point (65 bytes, uncompressed). Checked to be on the curve before it is stored.
package struct DeviceEncryptionKey: Sendable, Equatable {
    /// 1–64 of `A-Z a-z 0-9 _ -`.
    package var keyId: String
    package var publicKey: Data

    package init(keyId: String, publicKey: Data) {
        self.keyId = keyId
        self.publicKey = publicKey
    }

    /// Whether `keyId` has the shape a key id must have.
    package static func isValidKeyId(_ keyId: String) -> Bool {
        (1...64).contains(keyId.utf8.count) && keyId.utf8.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
