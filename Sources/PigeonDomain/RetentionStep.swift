import Foundation

/// What one retention pass did.
package struct RetentionStep: Sendable, Equatable {
    /// Partitions created ahead.
    package var created: Int
    /// Tables dropped (a day of notifications and a day of deliveries are two), by name.
    package var dropped: [String]
    /// False when another process held the retention lock and this pass did nothing.
    package var ran: Bool

    package init(created: Int, dropped: [String], ran: Bool) {
        self.created = created
        self.dropped = dropped
        self.ran = ran
    }
}
