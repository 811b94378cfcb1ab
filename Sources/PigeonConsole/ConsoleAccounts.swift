import PigeonHTTP

/// What checking an operator's name and password came to.
package enum ConsoleSignIn: Sendable, Equatable {
    case accepted(ConsoleOperator)
    /// Unknown name or wrong password (the two are never told apart).
    case refused
    /// The account could not be checked (the directory is down): said as such, never as a wrong password.
    case unavailable(String)
}

/// Somewhere operators' accounts live: a file of password hashes, the bank's directory (LDAP),
/// or the single account of a small deployment.
package protocol ConsoleAccountSource: Sendable {
    /// Checks `password` for `username`; `.refused` when this source has no such account.
    func signIn(username: String, password: String) async -> ConsoleSignIn
}

/// The accounts of every source, asked in order: the first that accepts signs the operator in.
/// A source that is down does not stop the others (a file account still signs in while the
/// directory is unreachable); when none accepts and one was down, the answer says so.
package struct ConsoleAccounts: ConsoleAccountSource {
    package let sources: [any ConsoleAccountSource]

    package init(_ sources: [any ConsoleAccountSource]) {
        self.sources = sources
    }

    package func signIn(username: String, password: String) async -> ConsoleSignIn {
        var unavailable: String?
        for source in sources {
            switch await source.signIn(username: username, password: password) {
            case .accepted(let person): return .accepted(person)
            case .refused: continue
            case .unavailable(let reason): unavailable = unavailable ?? reason
            }
        }
        return unavailable.map { .unavailable($0) } ?? .refused
    }
}

/// `consoleUsername`/`consolePassword`: one `admin`, for small deployments.
package struct ConsoleSingleAccount: ConsoleAccountSource {
    private let username: [UInt8]
    private let password: [UInt8]

    package init(username: String, password: String) {
        self.username = Array(username.utf8)
        self.password = Array(password.utf8)
    }

    /// The name and the password are compared apart, each in constant time: joined as the HTTP
    /// header joins them, a colon moved from the password into the name would still match.
    package func signIn(username: String, password: String) async -> ConsoleSignIn {
        let nameMatches = BasicAuthentication.constantTimeEqual(Array(username.utf8), self.username)
        let passwordMatches = BasicAuthentication.constantTimeEqual(Array(password.utf8), self.password)
        return nameMatches && passwordMatches ? .accepted(ConsoleOperator(name: username, role: .admin)) : .refused
    }
}
