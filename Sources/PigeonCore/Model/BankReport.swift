import Foundation

/// A report the bank must receive (CONTRACT §3).
public enum BankReport: Sendable, Equatable {
    case pushIsOpened(notificationId: String, user: String)
    case notificationExpired(notificationId: String, users: [String])

    /// The `outbox.kind` of this report.
    public var kind: String {
        switch self {
        case .pushIsOpened: "pushIsOpened"
        case .notificationExpired: "reportNotificationExpired"
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
