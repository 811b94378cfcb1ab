import Foundation

// What the operator console keeps: its sessions and its audit trail, as their stores hold them.

/// A console session as stored (CONTRACT §10): the cookie's id only as its SHA-256 digest, the
/// operator and role it was started for, the CSRF token its forms carry, and its two clocks.
package struct StoredConsoleSession: Sendable, Equatable {
    package var digest: Data
    package var operatorName: String
    package var role: String
    package var csrfToken: String
    package var startedAt: Date
    package var lastSeenAt: Date

    package init(digest: Data, operatorName: String, role: String, csrfToken: String, startedAt: Date, lastSeenAt: Date) {
        self.digest = digest
        self.operatorName = operatorName
        self.role = role
        self.csrfToken = csrfToken
        self.startedAt = startedAt
        self.lastSeenAt = lastSeenAt
    }
}

/// One entry of the console's audit trail (CONTRACT §10): who did what, from where, to what, why,
/// and how it ended. Never what was revealed.
package struct AuditEntry: Sendable, Equatable {
    /// What was done; the `rawValue` is the contract's spelling.
    package enum Action: String, Sendable, CaseIterable {
        case signIn = "sign-in"
        case signInFailed = "sign-in-failed"
        case reveal
        case revoke
        case requeue
        case testPush = "test-push"
        case outboxRetry = "outbox-retry"
    }

    /// The longest operator name, target, reason and outcome kept; longer ones are cut.
    package static let fieldLimit = 256

    /// When it was recorded (the database's clock; ignored when recording).
    package var at: Date
    package var operatorName: String
    /// `viewer`, `support`, `admin`, or empty for a sign-in that failed.
    package var role: String
    package var address: String
    package var action: Action
    package var target: String
    package var reason: String
    package var outcome: String

    package init(at: Date = Date(), operatorName: String, role: String, address: String, action: Action, target: String = "",
                 reason: String = "", outcome: String) {
        self.at = at
        self.operatorName = Self.bounded(operatorName)
        self.role = Self.bounded(role)
        self.address = Self.bounded(address)
        self.action = action
        self.target = Self.bounded(target)
        self.reason = Self.bounded(reason)
        self.outcome = Self.bounded(outcome)
    }

    private static func bounded(_ text: String) -> String {
        guard text.utf8.count > fieldLimit else { return text }
        var cut = Substring(text)
        while cut.utf8.count > fieldLimit { cut = cut.dropLast() }
        return String(cut)
    }
}
