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
    private let credentials: BasicAuthentication

    package init(username: String, password: String) {
        credentials = BasicAuthentication(username: username, password: password)
    }

    package func signIn(username: String, password: String) async -> ConsoleSignIn {
        credentials.accepts(username: username, password: password) ? .accepted(ConsoleOperator(name: username, role: .admin)) : .refused
    }
}

extension BasicAuthentication {
    /// A username and password from a form, in constant time like the header.
    package func accepts(username: String, password: String) -> Bool {
        Self.constantTimeEqual(Array("\(username):\(password)".utf8), expected)
    }
}
