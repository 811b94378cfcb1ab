import PigeonCore
import PostgresDriver

/// When subscriptions were last reached (`device_reach`), for subscription hygiene: a push a
/// service accepted for the device, or an acknowledgement from it. A device reached within the
/// last hour is left alone: hygiene counts in days, and a write per push would be work for
/// nothing — except its first reach ever, which marks it `reached` (the console's "never reached").
/// Only the week of the time is indexed (`reached_week`, computed by PostgreSQL), so an update
/// within a week is HOT: one WAL record, no index entry.
enum DeviceReach {
    static func record(deviceIds: [Int64], _ connection: PostgresConnection) throws {
        guard !deviceIds.isEmpty else { return }
        _ = try connection.query("""
            UPDATE device_reach SET reached_at = now(), reached = true
            WHERE device_id = ANY(\(PostgresArray.encode(deviceIds.map(String.init)))::bigint[]) AND (reached_at < now() - interval '1 hour' OR NOT reached)
            """)
    }
}
