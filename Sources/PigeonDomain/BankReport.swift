import Foundation

/// A report the bank must receive (CONTRACT §3, §7).
package enum BankReport: Sendable, Equatable {
    case pushIsOpened(notificationId: String, user: String)
    case notificationExpired(notificationId: String, users: [String])
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

    /// What the report is about, for operators' listings: a notification id or a pass.
    package var subject: String {
        switch self {
        case .pushIsOpened(let id, _), .notificationExpired(let id, _): id
        case .passUpdateNotFetched(let pass, _): pass.description
        }
    }

    /// Who the report names, for operators' listings: users, or how many devices.
    package var concerned: [String] {
        switch self {
        case .pushIsOpened(_, let user): [user]
        case .notificationExpired(_, let users): users
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
