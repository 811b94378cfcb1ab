import Foundation

/// A report the bank must receive (CONTRACT §3, §7).
public enum BankReport: Sendable, Equatable {
    case pushIsOpened(notificationId: String, user: String)
    case notificationExpired(notificationId: String, users: [String])
    /// `deviceCount` devices did not fetch the current version of a pass after every push.
    case passUpdateNotFetched(pass: PassIdentity, deviceCount: Int)

    /// The `outbox.kind` of this report.
    public var kind: String {
        switch self {
        case .pushIsOpened: "pushIsOpened"
        case .notificationExpired: "reportNotificationExpired"
        case .passUpdateNotFetched: "reportPassUpdateNotFetched"
        }
    }

    /// What the report is about, for operators' listings: a notification id or a pass.
    public var subject: String {
        switch self {
        case .pushIsOpened(let id, _), .notificationExpired(let id, _): id
        case .passUpdateNotFetched(let pass, _): pass.description
        }
    }

    /// Who the report names, for operators' listings: users, or how many devices.
    public var concerned: [String] {
        switch self {
        case .pushIsOpened(_, let user): [user]
        case .notificationExpired(_, let users): users
        case .passUpdateNotFetched(_, let count): ["\(count) device\(count == 1 ? "" : "s")"]
        }
    }
}

/// An outbox row held by a sender.
public struct ClaimedReport: Sendable, Equatable {
    public var id: Int64
    public var report: BankReport
    /// Attempts including this one.
    public var attempt: Int
    /// When the report was written (or re-queued by an operator).
    public var createdAt: Date

    public init(id: Int64, report: BankReport, attempt: Int, createdAt: Date) {
        self.id = id
        self.report = report
        self.attempt = attempt
        self.createdAt = createdAt
    }
}
