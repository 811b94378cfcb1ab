/// How closely a device's last reach is kept (`device_reach.reached_at`, for subscription
/// hygiene and the console's "last reached"): a push accepted for the device, or an
/// acknowledgement from it, rewrites the time only when the one kept is older than this. A bank
/// pushes most of its users more than once a day, so at a day's precision most pushes write
/// nothing for the reach (a WAL record and a row version a push otherwise).
///
/// The precision follows the hygiene period (`deviceExpiredPeriodMillis`): a thirtieth of it, at
/// most a day (the default period, 30 days, gives a day), at least a second. Hygiene waits that
/// much longer than the period, so a device is never removed while it was reached within the
/// period — at most a thirtieth of it late.
package enum ReachPrecision {
    /// The precision for a hygiene period of `expiry`.
    package static func forExpiry(_ expiry: Duration) -> Duration {
        min(.seconds(86_400), max(.seconds(1), expiry / 30))
    }

    /// How long a device goes unreached, as kept, before hygiene removes it: the period and the
    /// precision the time is kept at.
    package static func hygieneAge(forExpiry expiry: Duration) -> Duration {
        expiry + forExpiry(expiry)
    }
}
