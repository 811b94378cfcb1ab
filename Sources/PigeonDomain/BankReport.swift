import Foundation

/// Why the bank is told that a notification did not reach users (`reportNotificationExpired`).
package enum ExpiryReason: String, Sendable, Equatable, CaseIterable {
    /// The notification's timeout passed before the users acknowledged it (CONTRACT §7).
    case timeout
    /// The users' deliveries became final within the timeout without reaching any device: every
    /// token dead, no device at all, or every push failed for good (CONTRACT §10). The bank hears
    /// it at once, so its fallback (an SMS) need not wait for the timeout.
    case reachedNobody

    /// `kind` as operators read it, saying why the report is sent.
    package func label(kind: String) -> String {
        switch self {
        case .timeout: "\(kind) (timeout)"
        case .reachedNobody: "\(kind) (reached nobody)"
        }
    }

    /// The value of the `reason` label of `pigeon_bank_reports_total`.
    package var metricLabel: String {
        switch self {
        case .timeout: "timeout"
        case .reachedNobody: "reached_nobody"
        }
    }
}

/// A report the bank must receive (CONTRACT §3, §7, §10).
package enum BankReport: Sendable, Equatable {
    case pushIsOpened(notificationId: String, user: String)
    case notificationExpired(notificationId: String, users: [String], reason: ExpiryReason = .timeout)
    /// `deviceCount` devices did not fetch the current version of a pass after every push.
    case passUpdateNotFetched(pass: PassIdentity, deviceCount: Int)

    /// The `outbox.kind` of this report.
    package var kind: String {
        switch self {
        case .pushIsOpened: "pushIsOpened"
        case .notificationExpired: "reportNotificationExpired"
        case .passUpdateNotFetched: "reportPassUpdateNotFetched"
        }
    }

    /// Why an expiry report is sent; nil for the other kinds.
    package var expiryReason: ExpiryReason? {
        if case .notificationExpired(_, _, let reason) = self { return reason }
        return nil
    }

    /// The kind as operators read it: an expiry report says why it is sent.
    package var label: String {
        expiryReason?.label(kind: kind) ?? kind
    }

    /// What the report is about, for operators' listings: a notification id or a pass.
    package var subject: String {
        switch self {
        case .pushIsOpened(let id, _), .notificationExpired(let id, _, _): id
        case .passUpdateNotFetched(let pass, _): pass.description
        }
    }

    /// Who the report names, for operators' listings: users, or how many devices.
    package var concerned: [String] {
        switch self {
        case .pushIsOpened(_, let user): [user]
        case .notificationExpired(_, let users, _): users
        case .passUpdateNotFetched(_, let count): ["\(count) device\(count == 1 ? "" : "s")"]
        }
    }
}

/// An outbox row held by a sender.
package struct ClaimedReport: Sendable, Equatable {
    package var id: Int64
    package var report: BankReport
    /// Attempts including this one.
    package var attempt: Int
    /// When the report was written (or re-queued by an operator).
    package var createdAt: Date

    package init(id: Int64, report: BankReport, attempt: Int, createdAt: Date) {
        self.id = id
        self.report = report
        self.attempt = attempt
        self.createdAt = createdAt
    }
}
