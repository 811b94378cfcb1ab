import Foundation

/// What one sweep step did.
package struct SweepStep: Sendable, Equatable {
    /// Rows changed (deliveries expired, devices deleted).
    package var rows: Int
    /// Reports written to the outbox.
    package var reports: Int
    /// False when another process held the sweep lock and this step did nothing.
    package var ran: Bool
    /// True when more work was left for a next step.
    package var more: Bool
    /// Confidential notifications whose content the step erased: every recipient final, or
    /// the timeout passed.
    package var erasedFinal: Int
    package var erasedExpired: Int

    package init(rows: Int, reports: Int, ran: Bool, more: Bool, erasedFinal: Int = 0, erasedExpired: Int = 0) {
        self.erasedFinal = erasedFinal
        self.erasedExpired = erasedExpired
        self.rows = rows
        self.reports = reports
        self.ran = ran
        self.more = more
    }
}
