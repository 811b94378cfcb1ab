import PigeonCore
import PigeonDomain
import PostgresDriver

/// When subscriptions were last reached (`device_reach`), for subscription hygiene: a push a
/// service accepted for the device, or an acknowledgement from it. A device whose kept time is
/// within the precision (``ReachPrecision``: a day with the default hygiene period) is left alone:
/// hygiene counts in weeks, and a write per push would be work for nothing — except its first
/// reach ever, which marks it `reached` (the console's "never reached").
/// Only the week of the time is indexed (`reached_week`, computed by PostgreSQL), so an update
/// within a week is HOT: one WAL record, no index entry.
package enum DeviceReach {
    /// The precision of a store given none (an hour, as before the hygiene period set it): the
    /// gateway gives its stores ``ReachPrecision/forExpiry(_:)`` of its period.
    package static let defaultPrecision: Duration = .seconds(3_600)

    /// Marks `deviceIds` reached now where the time kept is older than `precision`.
    static func record(deviceIds: [Int64], precision: Duration, _ connection: PostgresConnection) throws {
        guard !deviceIds.isEmpty else { return }
        let seconds = Int(max(1, precision.components.seconds))
        _ = try connection.query("""
            UPDATE device_reach SET reached_at = now(), reached = true
            WHERE device_id = ANY(\(PostgresArray.encode(deviceIds.map(String.init)))::bigint[])
              AND (reached_at < now() - make_interval(secs => \(literal: seconds)) OR NOT reached)
            """)
    }
}
