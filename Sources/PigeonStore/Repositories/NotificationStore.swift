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

    public init(pool: PostgresPool, identifiers: UserIdentifiers) {
        self.pool = pool
        self.identifiers = identifiers
    }

    /// Stores `notification` and one delivery per unique recipient: `QUEUED` when the user has a
    /// subscribed device, `INVALID_SUBSCRIPTION` otherwise. A repeated id stores nothing.
    public func send(_ notification: PushNotification, now: Date = Date()) async throws -> SendOutcome {
        let recipients = identifiers.unique(notification.recipients)
        let folded = recipients.map { $0.lowercased() }
        let userColumn = identifiers.caseInsensitive ? "user_folded" : "user_id"
        let content = notification.pushContent
        let parameters: [String?] = [
            notification.id,
            PostgresArray.encode(notification.recipients),
            String(notification.timeoutSeconds),
            notification.perishable.map { $0 ? "true" : "false" },
            notification.priority.map(String.init),
            content.badge.map(String.init),
            content.sound,
            content.text,
            content.type.rawValue,
            PostgresArray.encode(content.details.map(\.key)),
            PostgresArray.encode(content.details.map(\.value)),
            notification.details.map { PostgresArray.encode($0.map(\.key)) },
            notification.details.map { PostgresArray.encode($0.map(\.value)) },
            Self.timestamp(now),
            PostgresArray.encode(recipients),
            PostgresArray.encode(folded),
            PostgresArray.encode(identifiers.caseInsensitive ? folded : recipients),
        ]
        return try await pool.withConnection { connection in
            // One statement, so one round trip and one commit: the notification and every
            // delivery are stored together or not at all. No row back means the id was taken.
            let rows = try connection.query("""
                WITH notification AS (
                    INSERT INTO notifications (id, recipients, timeout_seconds, perishable, priority,
                        push_badge, push_sound, push_text, push_type, push_detail_keys, push_detail_values,
                        detail_keys, detail_values, created_at, expires_at)
                    VALUES ($1, $2::text[], $3::integer, $4::boolean, $5::integer, $6::integer, $7, $8, $9,
                        $10::text[], $11::text[], $12::text[], $13::text[], $14::timestamptz,
                        $14::timestamptz + make_interval(secs => $3::integer))
                    ON CONFLICT (id) DO NOTHING
                    RETURNING id, created_at, expires_at
                )
                INSERT INTO deliveries (notification_id, position, user_id, user_folded, state, priority,
                    expires_at, created_at, updated_at)
                SELECT n.id, r.position, r.user_id, r.user_folded,
                    CASE WHEN EXISTS (SELECT 1 FROM devices d
                                      WHERE d.\(userColumn) = r.lookup AND d.state = 'SUBSCRIBED')
                         THEN 'QUEUED' ELSE 'INVALID_SUBSCRIPTION' END,
                    COALESCE($5::integer, 0), n.expires_at, n.created_at, n.created_at
                FROM notification n,
                     unnest($15::text[], $16::text[], $17::text[]) WITH ORDINALITY AS r(user_id, user_folded, lookup, position)
                RETURNING position, state
                """, parameters)
            guard !rows.isEmpty else {
                return .duplicate(try Self.states(of: notification.id, connection))
            }
            var states = [DeliveryState?](repeating: nil, count: recipients.count)
            for row in rows.rows {
                if let position = row.integer(0), let state = row.text(1).flatMap(DeliveryState.init(rawValue:)),
                   position >= 1, position <= recipients.count {
                    states[position - 1] = state
                }
            }
            return .stored(zip(recipients, states).map { RecipientState(user: $0, state: $1 ?? .invalidSubscription) })
        }
    }

    /// The notification as sent, or `nil` if the id is unknown.
    public func notification(id: String) async throws -> PushNotification? {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                SELECT id, recipients, timeout_seconds, perishable, priority, push_badge, push_sound,
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
    }

    /// Each recipient's state in the order sent, or `nil` if the id is unknown.
    public func deliveryStatus(id: String) async throws -> [RecipientState]? {
        try await pool.withConnection { connection in
            let exists = try connection.query("SELECT 1 FROM notifications WHERE id = $1", [id])
            guard !exists.isEmpty else { return nil }
            return try Self.states(of: id, connection)
        }
    }

    private static func states(of id: String, _ connection: PostgresConnection) throws -> [RecipientState] {
        try connection.query(
            "SELECT user_id, state FROM deliveries WHERE notification_id = $1 ORDER BY position", [id]
        ).rows.map { row in
            RecipientState(user: row[0] ?? "", state: row[1].flatMap(DeliveryState.init(rawValue:)) ?? .queued)
        }
    }

    private static func pairs(keys: String, values: String) -> [KeyValue] {
        zip(PostgresArray.decode(keys), PostgresArray.decode(values)).map { KeyValue($0 ?? "", $1 ?? "") }
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
