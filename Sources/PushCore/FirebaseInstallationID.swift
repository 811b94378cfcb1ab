/// An Android device addressed by its Firebase Installation ID instead of a registration token
/// (CONTRACT §9: registered with `"tokenType": "fid"`, pushed with FCM v1's `fid` target). It is
/// stored where a token is, as `fid:` and the id: a registration token never starts so (its
/// first part is a 22-character instance id followed by `:`).
package enum FirebaseInstallationID {
    package static let storedPrefix = "fid:"
    /// A FID is 22 characters of the URL-safe base64 alphabet.
    package static let length = 22

    /// The stored form of `fid`.
    package static func stored(_ fid: String) -> String { storedPrefix + fid }

    /// The FID of a stored push token, or `nil` for a registration token.
    package static func fid(inStored token: String) -> Substring? {
        token.hasPrefix(storedPrefix) ? token.dropFirst(storedPrefix.count) : nil
    }

    /// Why `fid` is not a Firebase Installation ID, or `nil` when it is one: 22 characters of
    /// `A-Z a-z 0-9 - _` whose first four bits are `0111` (Firebase's prefix: the first
    /// character is one of `c d e f`).
    package static func problem(_ fid: String) -> String? {
        guard fid.utf8.count == length else {
            return "a Firebase Installation ID has \(length) characters, got \(fid.utf8.count)"
        }
        guard fid.utf8.allSatisfy(isBase64URL) else {
            return "a Firebase Installation ID contains only letters, digits, '-' and '_'"
        }
        guard let first = fid.first, "cdef".contains(first) else {
            return "a Firebase Installation ID starts with c, d, e or f"
        }
        return nil
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }
}
