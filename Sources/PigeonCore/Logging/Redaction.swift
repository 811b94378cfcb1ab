import Foundation

/// Shortens secrets before they reach a log: push tokens, auth tokens, passwords.
package enum Redaction {
    /// Keeps the first and last four characters of long values (`abcd…wxyz`) so an operator can
    /// correlate lines without the log ever holding a usable token.
    package static func token(_ value: String) -> String {
        // The engine masks a token for every push: a printable ASCII one (a character a byte)
        // is masked from its bytes.
        if let masked = value.utf8.withContiguousStorageIfAvailable(maskedPrintableASCII) ?? nil { return masked }
        guard value.count > 12 else { return String(repeating: "*", count: value.count) }
        return "\(value.prefix(4))…\(value.suffix(4))"
    }

    /// "…" in UTF-8.
    private static let ellipsis: [UInt8] = [0xE2, 0x80, 0xA6]

    /// ``token(_:)`` of a value whose bytes are all printable ASCII (each byte a character, no
    /// CR LF pair); nil for any other.
    private static func maskedPrintableASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        guard bytes.count > 12 else { return String(repeating: "*", count: bytes.count) }
        return String(unsafeUninitializedCapacity: 8 + ellipsis.count) { text in
            for index in 0..<4 {
                text[index] = bytes[index]
                text[4 + ellipsis.count + index] = bytes[bytes.count - 4 + index]
            }
            for (offset, byte) in ellipsis.enumerated() { text[4 + offset] = byte }
            return 8 + ellipsis.count
        }
    }

    /// A name typed into a sign-in that was refused, as a log line or the audit trail keeps it:
    /// an operator who typed the password into the name field must not find it there. Up to
    /// three characters stay whole; a longer name keeps its first three and its length
    /// (`ope…(21)`), enough to tell which account was tried.
    package static func refusedName(_ name: String) -> String {
        guard name.count > 3 else { return name }
        return "\(name.prefix(3))…(\(name.count))"
    }

    /// A log line's stand-in for a password or key.
    package static let secret = "<redacted>"

    /// `url` without the `user:password@` part an operator may have written into it (shown in a
    /// WSDL, a console page or a log, it would give the credentials away); unchanged when it
    /// has none or is not a URL.
    package static func withoutCredentials(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.user != nil || components.password != nil else { return url }
        components.user = nil
        components.password = nil
        return components.string ?? url
    }
}
