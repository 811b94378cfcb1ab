import Foundation
import PigeonCore

/// What sending a notification did.
public enum SendOutcome: Sendable, Equatable {
    /// Stored now; one state per (unique) recipient, in the order sent.
    case stored([RecipientState])
    /// The id was used before; nothing was stored, these are the first send's current states.
    case duplicate([RecipientState])
}

/// Notifications and their deliveries. Every write is one transaction, committed before the
/// method returns.
public struct NotificationStore: Sendable {
    private let pool: PostgresPool
    private let identifiers: UserIdentifiers
    private let batcher: SendBatcher

    public init(pool: PostgresPool, identifiers: UserIdentifiers) {
        self.pool = pool
        self.identifiers = identifiers
        self.batcher = SendBatcher(pool: pool, identifiers: identifiers)
    }

    /// Stores `notification` and one delivery per unique recipient: `QUEUED` when the user has a
    /// subscribed device, `INVALID_SUBSCRIPTION` otherwise. A repeated id stores nothing.
    /// Returns once everything is committed (concurrent sends share one commit).
    public func send(_ notification: PushNotification) async throws -> SendOutcome {
        try await batcher.send(notification)
    }

    /// The notification as sent, or `nil` if the id is unknown. Without `recipients` its
    /// recipient list comes back empty: the delivery engine and the device API need only the
    /// content, and a million-recipient list is tens of megabytes.
    public func notification(id: String, recipients: Bool = true) async throws -> PushNotification? {
        try await pool.withConnection(idempotent: true) { connection in try Self.notification(id: id, recipients: recipients, connection) }
    }

    /// ``notification(id:recipients:)`` on a connection the caller holds.
    static func notification(id: String, recipients: Bool, _ connection: PostgresConnection) throws -> PushNotification? {
        let recipientsColumn = recipients ? "recipients" : "'{}'::text[]"
        let rows = try connection.query("""
            SELECT id, \(recipientsColumn), timeout_seconds, perishable, priority, push_badge, push_sound,
                push_text, push_type, push_detail_keys, push_detail_values, detail_keys, detail_values
            FROM notifications WHERE id = $1
            """, [id])
        guard let row = rows.rows.first else { return nil }
        let details: [KeyValue]? = row[11].map { keys in
            Self.pairs(keys: keys, values: row[12] ?? "{}")
        }
        return PushNotification(
            id: row[0] ?? id,
            recipients: PostgresArray.decode(row[1] ?? "{}").map { $0 ?? "" },
            timeoutSeconds: row.integer(2) ?? 0,
            pushContent: PushContent(
                badge: row.integer(5),
                sound: row[6],
                text: row[7] ?? "",
                type: row[8].flatMap(PushType.init(rawValue:)) ?? .universal,
                details: Self.pairs(keys: row[9] ?? "{}", values: row[10] ?? "{}")),
            details: details,
            perishable: row.boolean(3),
            priority: row.integer(4))
    }

    /// Each recipient's state in the order sent, or `nil` if the id is unknown.
    public func deliveryStatus(id: String) async throws -> [RecipientState]? {
        try await pool.withConnection(idempotent: true) { connection in
            let exists = try connection.query("SELECT 1 FROM notifications WHERE id = $1", [id])
            guard !exists.isEmpty else { return nil }
            return try Self.states(of: [id], connection)[id] ?? []
        }
    }

    /// Each recipient's state for several notifications, by notification id.
    static func states(of ids: [String], _ connection: PostgresConnection) throws -> [String: [RecipientState]] {
        var states: [String: [RecipientState]] = [:]
        for row in try connection.query(
            "SELECT notification_id, user_id, state FROM deliveries WHERE notification_id = ANY($1::text[]) ORDER BY notification_id, position",
            [PostgresArray.encode(ids)]
        ).rows {
            guard let id = row[0] else { continue }
            states[id, default: []].append(
                RecipientState(user: row[1] ?? "", state: row[2].flatMap(DeliveryState.init(rawValue:)) ?? .queued))
        }
        return states
    }

    private static func pairs(keys: String, values: String) -> [KeyValue] {
        zip(PostgresArray.decode(keys), PostgresArray.decode(values)).map { KeyValue($0 ?? "", $1 ?? "") }
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
