import Foundation

/// The moment a batch of sends is stored at, whole milliseconds since 1970, and what follows from
/// it exactly: its text for a `timestamptz` parameter, and a send's deadline as the `Date`
/// PostgreSQL's `expires_at` reads back as. A deadline computed in Swift from a `Date` and the
/// one PostgreSQL stores differed by the rounding of the fractional seconds, so the expiry
/// watcher took a send's noted deadline and the stored one for two.
struct StoredMoment: Sendable, Equatable {
    /// Milliseconds since 1970-01-01 00:00 UTC.
    let milliseconds: Int64

    init(_ date: Date) {
        milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The moment as ISO 8601 text in UTC with its milliseconds, e.g. `2026-12-06T05:30:00.123Z`.
    var text: String {
        let (seconds, fraction) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        let whole = Date(timeIntervalSince1970: TimeInterval(seconds))
            .formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false))
        let digits = String(fraction)
        return whole + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    /// The deadline of a send stored at this moment with `timeoutSeconds`, as the stored
    /// `expires_at` reads back (seconds since 1970 as a double).
    func deadline(timeoutSeconds: Int) -> Date {
        Date(timeIntervalSince1970: TimeInterval(milliseconds + Int64(timeoutSeconds) * 1000) / 1000)
    }
}
