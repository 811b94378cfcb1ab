internal import CLDAPShim
import Foundation
import PigeonCore

/// A directory (LDAP) as the console signs operators in against it: where it is, how it is
/// secured, and how long it may take. The password is checked by a bind as the user; the groups
/// by asking whether their `member` attribute names the user.
package struct LDAPDirectory: Sendable, Equatable {
    /// `ldaps://host:port`, or `ldap://host:port` (then StartTLS unless ``startTLS`` is false).
    package var url: String
    /// The CA that signed the directory's certificate (PEM); nil for the system's.
    package var caFile: String?
    /// StartTLS on an `ldap://` URL.
    package var startTLS: Bool
    /// For the connection and for each operation.
    package var timeoutMilliseconds: Int

    package init(url: String, caFile: String?, startTLS: Bool, timeoutMilliseconds: Int = 5_000) {
        self.url = url
        self.caFile = caFile
        self.startTLS = startTLS
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// What the directory said.
    package enum Answer: Sendable, Equatable {
        /// The password is right; `groups` are those of the ones asked that list the user.
        case bound(groups: Set<String>)
        /// Wrong password, no such user, or a locked account.
        case refused
        /// The directory could not be reached or asked.
        case unavailable(String)
    }

    /// Binds as `userDN` with `password` and asks each of `groups` whether it lists the user.
    /// Blocking (up to a few timeouts): call it off the cooperative pool.
    package func signIn(userDN: String, password: String, groups: [String]) -> Answer {
        // An empty password would be an unauthenticated bind, which a directory accepts.
        guard !password.isEmpty else { return .refused }
        var memberships = [Int32](repeating: 0, count: groups.count)
        let passwordBytes = Array(password.utf8)
        let result = CStrings.with(groups) { groupPointers in
            passwordBytes.withUnsafeBufferPointer { passwordBuffer in
                passwordBuffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(1, passwordBytes.count)) { passwordPointer in
                    pigeon_ldap_sign_in(url, caFile, startTLS ? 1 : 0, Int32(clamping: timeoutMilliseconds), userDN,
                                        passwordPointer, passwordBytes.count, groupPointers, groups.count, &memberships)
                }
            }
        }
        let error = withUnsafeBytes(of: result.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch result.outcome {
        case Int32(PIGEON_LDAP_BOUND.rawValue):
            return .bound(groups: Set(zip(groups, memberships).filter { $0.1 != 0 }.map(\.0)))
        case Int32(PIGEON_LDAP_REFUSED.rawValue):
            return .refused
        default:
            return .unavailable("\(url): \(error)")
        }
    }
}
