import Foundation

/// What one retention pass did.
public struct RetentionStep: Sendable, Equatable {
    /// Partitions created ahead.
    public var created: Int
    /// Tables dropped (a day of notifications and a day of deliveries are two), by name.
    public var dropped: [String]
    /// False when another process held the retention lock and this pass did nothing.
    public var ran: Bool

    public init(created: Int, dropped: [String], ran: Bool) {
        self.created = created
        self.dropped = dropped
        self.ran = ran
    }
}
