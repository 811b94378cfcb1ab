import Foundation

/// HTTP Basic credentials checked in constant time, so response timing tells an attacker nothing
/// about how much of a guess was right.
package struct BasicAuthentication: Sendable {
    package let expected: [UInt8]

    package init(username: String, password: String) {
        expected = Array("\(username):\(password)".utf8)
    }

    /// Whether an `Authorization` header carries the expected credentials.
    package func accepts(_ header: String?) -> Bool {
        guard let header, header.count < 4096 else { return false }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces))
        else { return false }
        return Self.constantTimeEqual(Array(decoded), expected)
    }

    /// The user name an `Authorization: Basic` header presents (up to 64 characters), or nil
    /// when it is not readable Basic credentials.
    package static func username(_ header: String) -> String? {
        guard header.count < 4096 else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)) else { return nil }
        let user = decoded.prefix { $0 != UInt8(ascii: ":") }
        return String(decoding: user.prefix(64), as: UTF8.self)
    }

    /// The user name and password an `Authorization: Basic` header presents, or nil when it is
    /// not readable Basic credentials (a header over 4 KB, not base64, not UTF-8, no colon).
    package static func credentials(_ header: String) -> (username: String, password: String)? {
        guard header.utf8.count < 4096 else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
              let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// Whether the two are the same bytes, in time that depends on their lengths only: a
    /// different length never matches (the right password followed by NUL bytes is wrong).
    package static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference: UInt8 = lhs.count == rhs.count ? 0 : 1
        for index in 0..<max(lhs.count, rhs.count) {
            let left = index < lhs.count ? lhs[index] : 0
            let right = index < rhs.count ? rhs[index] : 0
            difference |= left ^ right
        }
        return difference == 0
    }
}
