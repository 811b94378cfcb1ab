/// Why a confidential push could not be opened. None of them carries key material or content.
package enum DecryptionError: Error, Equatable, CustomStringConvertible {
    /// The envelope is not the v1 shape.
    case malformedEnvelope(String)
    /// A format this decryptor does not know (newer than `v1`).
    case unsupportedVersion(Int)
    /// The push was sealed to another key of this device (rotated): its `kid`.
    case wrongKey(keyId: String)
    /// The ciphertext, the notification id or the keys do not match (tampered, or another device's).
    case authenticationFailed
    /// The plaintext is not padding-framed JSON of a notification.
    case malformedContent(String)
    /// The device key itself is unusable.
    case badDeviceKey(String)

    package var description: String {
        switch self {
        case .malformedEnvelope(let reason): "malformed envelope: \(reason)"
        case .unsupportedVersion(let version): "envelope version \(version) is not supported (v1 only)"
        case .wrongKey(let keyId): "sealed to key '\(keyId)', which is not this device's current key"
        case .authenticationFailed: "the envelope does not open with this key and notification id"
        case .malformedContent(let reason): "malformed content: \(reason)"
        case .badDeviceKey(let reason): "unusable device key: \(reason)"
        }
    }
}
