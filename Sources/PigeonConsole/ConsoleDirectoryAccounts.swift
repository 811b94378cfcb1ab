import Foundation
import PigeonDomain
import PigeonCore
import PigeonHTTP
import PigeonLDAP

/// Operators in the bank's directory (CONTRACT §10): `consoleLdapUrl`, `consoleLdapUserDn` (a
/// template with `{user}`), `consoleLdapGroups` (a group DN per role). The password is checked by
/// a bind as the user; the role is the highest whose group's `member` names the user, and a user
/// in none of them has no console account. Names are letters, digits and `. _ @ -` (1–64), so
/// nothing typed into the sign-in form can change the DN. At most 8 sign-ins ask the directory
/// at once; a directory that is down or slow is answered as such (`unavailable`), never as a
/// wrong password.
package struct ConsoleDirectoryAccounts: ConsoleAccountSource {
    package let directory: LDAPDirectory
    package let userDNTemplate: String
    /// Each role's group DN.
    package let groups: [(role: ConsoleRole, dn: String)]
    private let concurrent = ConcurrencyLimit(8)

    package init(directory: LDAPDirectory, userDNTemplate: String, groups: [(role: ConsoleRole, dn: String)]) {
        self.directory = directory
        self.userDNTemplate = userDNTemplate
        self.groups = groups
    }

    /// Whether `name` may be put into the user DN template.
    package static func isPlainName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2E || byte == 0x5F || byte == 0x40 || byte == 0x2D
        } && name.first != "-" && name.first != "."
    }

    package func signIn(username: String, password: String) async -> ConsoleSignIn {
        guard Self.isPlainName(username), !password.isEmpty, password.utf8.count <= 1_024 else { return .refused }
        guard concurrent.tryAcquire() else { return .unavailable("too many sign-ins are asking the directory at once") }
        defer { concurrent.release() }
        let userDN = userDNTemplate.replacingOccurrences(of: "{user}", with: username)
        let directory = self.directory, groupDNs = groups.map(\.dn)
        let answer = await BlockingWork.run("ldap sign-in") { directory.signIn(userDN: userDN, password: password, groups: groupDNs) }
        switch answer {
        case .refused:
            return .refused
        case .unavailable(let reason):
            return .unavailable(reason)
        case .bound(let member):
            let roles = groups.filter { member.contains($0.dn) }.map(\.role)
            guard let role = roles.max() else { return .refused }
            return .accepted(ConsoleOperator(name: username, role: role))
        }
    }
}
