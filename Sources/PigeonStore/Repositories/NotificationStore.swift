import Foundation
import PigeonCore
import PigeonDomain
import PostgresDriver


/// Notifications and their deliveries. Every write is one transaction, committed before the
/// method returns.
package struct NotificationStore: Sendable {
    private let pool: PostgresPool
    private let identifiers: UserIdentifiers
    private let batcher: SendBatcher

    /// `now` is the moment a send is stored at (its period and expiry); tests move it.
    /// `logger` tells of background work that failed (a day's statistics not refreshed).
    package init(pool: PostgresPool, identifiers: UserIdentifiers, logger: Logger? = nil, now: @escaping @Sendable () -> Date = Date.init) {
        self.init(pool: pool, identifiers: identifiers, limits: SendBatcher.Limits(), logger: logger, now: now)
    }

    init(pool: PostgresPool, identifiers: UserIdentifiers, limits: SendBatcher.Limits, logger: Logger? = nil,
         now: @escaping @Sendable () -> Date = Date.init) {
        self.pool = pool
        self.identifiers = identifiers
        self.batcher = SendBatcher(pool: pool, identifiers: identifiers, limits: limits, logger: logger, now: now)
    }

    /// Stores `notification` and one delivery per unique recipient: `QUEUED` when the user has a
    /// subscribed device, `INVALID_SUBSCRIPTION` otherwise. A repeated id stores nothing.
    /// Returns once everything is committed (concurrent sends share one commit).
    package func send(_ notification: PushNotification) async throws -> SendOutcome {
        try await batcher.send(notification)
    }

    /// The notification as sent, or `nil` if the id is unknown (or older than the retention
    /// period). Without `recipients` its recipient list comes back empty: the device API needs
    /// only the content, and a million-recipient list is tens of megabytes.
    package func notification(id: String, recipients: Bool = true) async throws -> PushNotification? {
        try await pool.withConnection(idempotent: true) { connection in
            guard let key = try Self.key(of: id, connection) else { return nil }
            return try Self.notification(key: key, recipients: recipients, connection)
        }
    }

    /// The notification stored under `key` (content only: the engine's view), or `nil`.
    package func notification(key: Int64) async throws -> PushNotification? {
        try await pool.withConnection(idempotent: true) { connection in
            try Self.notification(key: key, recipients: false, connection)
        }
    }

    /// The key of notification `id`, or `nil`. Ids are looked up in every partition (each has its
    /// index on `id`); the newest days come first, where almost every lookup ends.
    static func key(of id: String, _ connection: PostgresConnection) throws -> Int64? {
        let recent = try connection.query(
            "SELECT key FROM notifications WHERE id = \(id) AND key >= pigeon_day_key(pigeon_day(now()) - 1) LIMIT 1")
        if let key = try recent.decodedFirst({ try $0.decode("key", as: Int64.self) }) { return key }
        return try connection.query("SELECT key FROM notifications WHERE id = \(id) LIMIT 1")
            .decodedFirst { try $0.decode("key", as: Int64.self) }
    }

    /// The notifications stored under `keys` (content only: the engine's view of a claimed
    /// batch), in one query; keys that are gone are missing from the answer.
    package func notifications(keys: [Int64]) async throws -> [Int64: PushNotification] {
        guard let lowest = keys.min(), let highest = keys.max() else { return [:] }
        return try await pool.withConnection(idempotent: true) { connection in
            // The key range lets the plan leave out the days no key is in.
            let rows = try connection.query(sql: """
                SELECT \(Self.contentColumns), key FROM notifications
                WHERE key = ANY($1::bigint[]) AND key BETWEEN $2::bigint AND $3::bigint
                """, [PostgresArray.encode(keys.map { String($0) }), String(lowest), String(highest)])
            return Dictionary(uniqueKeysWithValues: try rows.decoded { row in
                (try row.decode("key", as: Int64.self), try Self.content(row, recipients: []))
            })
        }
    }

    /// The columns ``content(_:recipients:)`` reads.
    private static let contentColumns = """
        id, timeout_seconds, perishable, priority, push_badge, push_sound,
            push_text, push_type, push_detail_keys, push_detail_values, detail_keys, detail_values,
            confidential, content_erased_at IS NOT NULL AS content_erased, interruption_level
        """

    /// ``notification(key:)`` on a connection the caller holds; `recipients` reads the
    /// recipient list back from the deliveries, in the order sent.
    static func notification(key: Int64, recipients: Bool, _ connection: PostgresConnection) throws -> PushNotification? {
        let rows = try connection.query(sql: "SELECT \(contentColumns) FROM notifications WHERE key = $1", [String(key)])
        guard let row = rows.named.first else { return nil }
        let users = recipients
            ? try connection.query("SELECT user_id FROM deliveries WHERE notification_key = \(String(key)) ORDER BY position")
                .decoded { try $0.decode("user_id", as: String.self) }
            : []
        return try content(row, recipients: users)
    }

    /// A notification from a row of ``contentColumns``.
    private static func content(_ row: PostgresRow, recipients users: [String]) throws(PostgresError) -> PushNotification {
        let details: [KeyValue]? = try row.decodeIfPresent("detail_keys", as: String.self).map { keys throws(PostgresError) in
            Self.pairs(keys: keys, values: try row.decodeIfPresent("detail_values") ?? "{}")
        }
        return PushNotification(
            id: try row.decode("id"),
            recipients: users,
            timeoutSeconds: try row.decode("timeout_seconds"),
            pushContent: PushContent(
                badge: try row.decodeIfPresent("push_badge"),
                sound: try row.decodeIfPresent("push_sound"),
                text: try row.decode("push_text"),
                // A type or level a newer version stored is pushed as this version knows best.
                type: try row.decodeIfPresent("push_type", as: String.self).flatMap(PushType.init(rawValue:)) ?? .universal,
                details: Self.pairs(keys: try row.decodeIfPresent("push_detail_keys") ?? "{}", values: try row.decodeIfPresent("push_detail_values") ?? "{}")),
            details: details,
            perishable: try row.decodeIfPresent("perishable"),
            priority: try row.decodeIfPresent("priority"),
            confidential: try row.decodeIfPresent("confidential"),
            contentErased: try row.decode("content_erased"),
            interruptionLevel: try row.decodeIfPresent("interruption_level", as: String.self).flatMap(InterruptionLevel.init(rawValue:)))
    }

    /// Each recipient's state in the order sent, or `nil` if the id is unknown.
    package func deliveryStatus(id: String) async throws -> [RecipientState]? {
        try await pool.withConnection(idempotent: true) { connection in
            guard let key = try Self.key(of: id, connection) else { return nil }
            return try Self.states(of: key, connection)
        }
    }

    /// Each recipient's state of the notification stored under `key`, in the order sent.
    static func states(of key: Int64, _ connection: PostgresConnection) throws -> [RecipientState] {
        try connection.query(
            "SELECT user_id, state FROM deliveries WHERE notification_key = \(String(key)) ORDER BY position"
        ).decoded { row in
            // A state this binary does not know is an error, never reported as QUEUED.
            RecipientState(user: try row.decode("user_id"), state: try row.decode("state"))
        }
    }

    private static func pairs(keys: String, values: String) -> [KeyValue] {
        zip(PostgresArray.decode(keys), PostgresArray.decode(values)).map { KeyValue($0 ?? "", $1 ?? "") }
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
