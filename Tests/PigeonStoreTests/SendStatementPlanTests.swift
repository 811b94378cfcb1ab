import Foundation
import PigeonDomain
import PigeonTestSupport
import Testing
@testable import PigeonStore

/// The send statement's plan as the pool runs it: prepared once per connection and planned
/// generically, often while the day's partition is not yet analyzed.
@Suite("Send statement plan (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct SendStatementPlanTests {
    @Test("the repeated-id check probes the index: it reads no stored notification, however many the unanalyzed day holds")
    func repeatedIdCheckProbesTheIndex() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        defer { Task { await drop() } }
        let identifiers = UserIdentifiers(caseInsensitive: false)
        let batcher = SendBatcher(pool: pool, identifiers: identifiers)
        let send = PushNotification(id: "plan-probe", recipients: ["someone"], timeoutSeconds: 60,
                                    pushContent: PushContent(text: "Code 1234", type: .pinCode))
        let literals = batcher.parameters([(send, ["someone"])]).map { value in
            value.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" } ?? "NULL"
        }
        let plan = try await pool.withConnection { connection in
            // Today's partition holds 3,000 notifications the planner has no statistics for
            // (as after a busy day's first minutes, before autovacuum analyzes it).
            try connection.query("""
                INSERT INTO notifications (key, id, recipient_count, timeout_seconds, push_text, push_type, created_at, expires_at)
                SELECT pigeon_notification_key(now()), 'stored-' || n, 1, 60, 'x', 'PIN_CODE', now(), now() + interval '60 s'
                FROM generate_series(1, 3000) AS n
                """)
            try connection.query("PREPARE send_probe AS " + SendBatcher.insertStatement(userColumn: identifiers.userColumn))
            try connection.query("BEGIN")
            defer { _ = try? connection.query("ROLLBACK") }
            return try connection.query("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE send_probe(\(literals.joined(separator: ", ")))").scalar ?? "[]"
        }
        var notificationScans = 0
        var storedRowsRead = 0.0
        func walk(_ node: Any) {
            if let object = node as? [String: Any] {
                if let relation = object["Relation Name"] as? String, relation.hasPrefix("notifications_p") {
                    notificationScans += 1
                    if object["Node Type"] as? String == "Seq Scan" {
                        storedRowsRead += ((object["Actual Rows"] as? Double) ?? 0) * ((object["Actual Loops"] as? Double) ?? 1)
                            + ((object["Rows Removed by Filter"] as? Double) ?? 0)
                    }
                }
                object.values.forEach(walk)
            } else if let array = node as? [Any] {
                array.forEach(walk)
            }
        }
        walk(try JSONSerialization.jsonObject(with: Data(plan.utf8)))
        #expect(notificationScans > 0, "the plan does not look up stored notifications at all: \(plan.prefix(2000))")
        #expect(storedRowsRead == 0, "the repeated-id check read \(storedRowsRead) stored notifications: \(plan.prefix(4000))")
    }
}
