/// Devices removed, with when and why (`removed_devices`): every statement that deletes devices
/// notes them in the same statement, through ``noted(reason:)``.
enum RemovedDevices {
    /// The reasons, as the console shows them.
    static let deadToken = "its push service declared the token dead"
    static let deletedByBank = "deleteSubscription from the bank"
    static let replaced = "replaced by the user's newer device (overrideSubscriptions)"
    static let stale = "no successful delivery within deviceExpiredPeriodMillis"

    /// A CTE `noted` that records the rows of a CTE `gone` (a `DELETE FROM devices … RETURNING *`)
    /// with the reason in parameter `reason` (e.g. `$2`); the token shortened in SQL as
    /// `Redaction.token` shortens it in Swift (the whole token never reaches this table).
    static func noted(reason: String) -> String {
        """
        noted AS (
            INSERT INTO removed_devices (user_id, user_folded, device_id, platform, app_id, token_masked, reason)
            SELECT user_id, user_folded, device_id, platform, app_id,
                   CASE WHEN length(push_token) > 12 THEN left(push_token, 4) || '…' || right(push_token, 4)
                        ELSE repeat('*', length(push_token)) END,
                   \(reason)::text
            FROM gone
        )
        """
    }
}
