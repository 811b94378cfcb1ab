/// What an operator may do in the console (CONTRACT §10). Each role has the rights of the one
/// before it: `viewer` reads every page and JSON `GET`; `support` also reveals masked content,
/// re-queues reports and sends a test push; `admin` also revokes devices and sees the
/// configuration page.
package enum ConsoleRole: String, Sendable, CaseIterable, Comparable {
    case viewer
    case support
    case admin

    /// One thing the console lets an operator do.
    package enum Right: String, Sendable, CaseIterable {
        case read
        case reveal
        case requeue
        case testPush
        case revoke
        case configuration
    }

    /// The least role holding `right`.
    package static func least(for right: Right) -> ConsoleRole {
        switch right {
        case .read: .viewer
        case .reveal, .requeue, .testPush: .support
        case .revoke, .configuration: .admin
        }
    }

    package func allows(_ right: Right) -> Bool { self >= Self.least(for: right) }

    package static func < (a: ConsoleRole, b: ConsoleRole) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// A person signed in to the console: their own name and the role their account grants.
package struct ConsoleOperator: Sendable, Equatable {
    package var name: String
    package var role: ConsoleRole

    package init(name: String, role: ConsoleRole) {
        self.name = name
        self.role = role
    }
}
