import PigeonDomain

/// CONTRACT §10 "The bank hears at once when a notification reaches nobody", as SQL shared by the
/// statements that make a delivery final: the engine's outcome write (every token dead, every
/// push failed for good) and the send's insert (no device at all). The statement that writes
/// such a state within the notification's timeout sets `reported_early_at` and queues one
/// `reportNotificationExpired` (reason `reachedNobody`) per notification, naming those users in
/// the order sent — in the same statement, so the state and its report commit together, once,
/// whichever gateway wrote it. The expiry sweep passes over a delivery reported early.
enum ReachedNobody {
    /// The states that end a delivery without any device reached.
    static let states = DeliveryState.allCases.filter(\.reachedNobody)

    /// Users one report names at most (as the expiry sweep's reports): a blast's recipients
    /// without devices are told in several.
    static let usersPerReport = 10_000

    /// True for a row whose new state `state` reached nobody while its notification
    /// (`expiresAt`) is within its timeout: SQL over the statement's column expressions.
    static func condition(state: String, expiresAt: String) -> String {
        "\(state) IN (\(states.map { "'\($0.rawValue)'" }.joined(separator: ", "))) AND \(expiresAt) > now()"
    }

    /// A data-modifying CTE (`reached_nobody_reports AS (…)`) that queues the reports for the rows
    /// of `source` — a CTE returning `notification_key`, `position`, `user_id` and a boolean
    /// `reached_nobody` — grouped by notification, up to ``usersPerReport`` users each. The
    /// notification's id is read by its key from `notifications` (one probe of its day's
    /// partition per report), or from a CTE with `key` and `id` when the notification is inserted
    /// by the same statement (a statement does not see its own CTEs' rows in the table).
    static func reports(from source: String, notifications: String = "notifications") -> String {
        """
        reached_nobody_reports AS (
            INSERT INTO outbox (kind, payload)
            SELECT '\(BankReport.notificationExpired(notificationId: "", users: []).kind)',
                   jsonb_build_object('notificationId', n.id, 'users', r.users, 'reason', '\(ExpiryReason.reachedNobody.rawValue)')
            FROM (SELECT notification_key, jsonb_agg(user_id ORDER BY position) AS users FROM \(source)
                  WHERE reached_nobody GROUP BY notification_key, (position - 1) / \(usersPerReport)) r
            CROSS JOIN LATERAL (SELECT id FROM \(notifications) WHERE key = r.notification_key) n
            RETURNING 1
        )
        """
    }
}
