import Foundation
import PigeonDomain
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonStore

/// Statements as the pool runs them: prepared once per connection and planned generically,
/// often while the day's partition is not yet analyzed or was analyzed while it was small.
@Suite("Plans while sends fill a day (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct SendStatementPlanTests {
    @Test("the repeated-id check probes the index: it reads no stored notification, however many the unanalyzed day holds")
    func repeatedIdCheckProbesTheIndex() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        defer { Task { await drop() } }
        let identifiers = UserIdentifiers(caseInsensitive: false)
        let batcher = SendBatcher(pool: pool, identifiers: identifiers)
        let send = PushNotification(id: "plan-probe", recipients: ["someone"], timeoutSeconds: 60,
                                    pushContent: PushContent(text: "Code 1234", type: .pinCode))
        let literals = batcher.parameters([(send, ["someone"])], at: StoredMoment(Date())).map { value in
            value.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" } ?? "NULL"
        }
        let plan = try await pool.withConnection { connection in
            // Today's partition holds 3,000 notifications the planner has no statistics for
            // (as after a busy day's first minutes, before autovacuum analyzes it).
            try connection.query(sql: """
                INSERT INTO notifications (key, id, recipient_count, timeout_seconds, push_text, push_type, created_at, expires_at)
                SELECT pigeon_notification_key(now()), 'stored-' || n, 1, 60, 'x', 'PIN_CODE', now(), now() + interval '60 s'
                FROM generate_series(1, 3000) AS n
                """)
            try connection.query(sql: "PREPARE send_probe AS " + SendBatcher.insertStatement(userColumn: identifiers.userColumn))
            try connection.query(sql: "BEGIN")
            defer { _ = try? connection.query(sql: "ROLLBACK") }
            return try connection.query(sql: "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE send_probe(\(literals.joined(separator: ", ")))").scalar ?? "[]"
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

    @Test("a blast stored into a day analyzed while small: the day is analyzed within the send's transaction, so a connection's cached plan of a write by key (a hand-back) is made again before any claim sees the blast, and probes the index per row")
    func bigSendRefreshesTheDaysStatistics() async throws {
        let (pool, url, drop) = try await TestDatabase.isolatedDatabaseWithURL()
        defer { Task { await drop() } }
        let blast = 30_000
        let store = try await subscribedStore(pool, users: blast)
        func send(_ id: String, _ users: ClosedRange<Int>) async throws { _ = try await Self.send(store, id, users) }
        // The day as autovacuum leaves it in the morning: a few sends, analyzed. From here on
        // only the gateway's analyses count: autovacuum stays out of the day's partition.
        try await send("morning", 1...200)
        let partition = try await pool.withConnection { connection in
            let partition = try connection.query(sql: "SELECT tableoid::regclass::text FROM deliveries LIMIT 1").scalar ?? ""
            try connection.query(sql: "ALTER TABLE \(partition) SET (autovacuum_enabled = false)")
            try connection.query(sql: "ANALYZE \(partition)")
            return partition
        }
        #expect(partition.hasPrefix("deliveries_p"), "today's partition: \(partition)")

        // An engine connection that has handed back the morning's rows: its generic plan is cached.
        let engine = try PostgresConnection(settings: PostgresConnectionSettings(url: url))
        try engine.query(sql: "SELECT set_config('plan_cache_mode', 'force_generic_plan', false)")
        try engine.query(sql: "PREPARE lease_probe AS " + DeliveryQueue.handBackStatement)
        // The probe's lease: every row it hands back is held through it (claimed after any write).
        let probeLease = try engine.query(sql: """
            INSERT INTO delivery_leases (owner, claimed_at, leased_until, remaining, lowest_key, highest_key, lowest_priority, highest_priority,
                                         notification_keys, users, positions)
            VALUES ('probe', now() + interval '1 hour', now() + interval '2 hours', 1000000, 0, 0, 0, 0, '{}', '{}', '{}') RETURNING id
            """).scalar ?? "0"
        func lease(_ id: String, explain: Bool) throws -> String {
            let due = try engine.query(sql: """
                SELECT d.notification_key, d.user_folded, d.position FROM deliveries d JOIN notifications n ON n.key = d.notification_key
                WHERE n.id = $1 ORDER BY d.position LIMIT 500
                """, [id]).rows
            let keys = due.compactMap { $0.text(0) }
            func literal(_ value: String?) -> String { value.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" } ?? "NULL" }
            let arguments = [literal("probe"), literal("60"), "NULL", literal(PostgresArray.encode(keys)),
                             literal(PostgresArray.encode(due.map { $0.text(1) })), literal(PostgresArray.encode(due.map { $0.text(2) })),
                             literal(PostgresArray.encode(keys.map { _ in probeLease })), literal(keys.first), literal(keys.first)]
            try engine.query(sql: "BEGIN")
            defer { _ = try? engine.query(sql: "ROLLBACK") }
            try DeliveryQueue.readInQueueOrder(engine)
            return try engine.query(sql: (explain ? "EXPLAIN (ANALYZE, FORMAT JSON) " : "") + "EXECUTE lease_probe(\(arguments.joined(separator: ", ")))").scalar ?? "[]"
        }
        _ = try lease("morning", explain: false)

        try await send("blast", 1...blast)
        // Analyzed within the send's transaction: fresh the moment its rows are visible.
        let counted = try await pool.withConnection { connection in
            try connection.query(sql: "SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass", [partition]).scalar.flatMap(Int.init) ?? 0
        }
        #expect(counted >= blast, "the day's statistics count \(counted) rows once the blast is stored")
        let read = rowsRead(try lease("blast", explain: true), relationPrefix: "deliveries_p")
        #expect(read > 0 && read <= 2_000, "handing back 500 of the blast's rows read \(read) deliveries")
    }

    @Test("a send whose analysis cannot have the day's partition (another holds it) is stored all the same; the analysis is left to the background and happens once the partition is free")
    func analysisNeverFailsTheSend() async throws {
        let (pool, url, drop) = try await TestDatabase.isolatedDatabaseWithURL()
        defer { Task { await drop() } }
        let blast = 12_000
        let store = try await subscribedStore(pool, users: blast)
        _ = try await Self.send(store, "morning", 1...1)
        let partition = try await pool.withConnection { connection in
            try connection.query(sql: "SELECT tableoid::regclass::text FROM deliveries LIMIT 1").scalar ?? ""
        }
        func counted() async throws -> Int {
            try await pool.withConnection { connection in
                try connection.query(sql: "SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass", [partition]).scalar.flatMap(Int.init) ?? 0
            }
        }
        // Another session holds the lock an analysis takes (as a long vacuum would).
        let holder = try PostgresConnection(settings: PostgresConnectionSettings(url: url))
        try holder.query(sql: "BEGIN")
        try holder.query(sql: "LOCK TABLE \(partition) IN SHARE UPDATE EXCLUSIVE MODE")
        let outcome = try await Self.send(store, "blast", 1...blast)
        guard case .stored(let states, _) = outcome else {
            Issue.record("the blast was not stored: \(outcome)")
            return
        }
        #expect(states.count == blast && states.allSatisfy { $0.state == .queued })
        #expect(try await counted() < blast, "analyzed although the partition was held")
        try holder.query(sql: "ROLLBACK")
        var refreshed = false
        for _ in 0..<600 where !refreshed {
            refreshed = try await counted() >= blast
            if !refreshed { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(refreshed, "the background analysis did not follow once the partition was free")
    }

    @Test("the send's backend killed while it analyzes the day: the send fails whole (nothing of it stored), and the same id sent again is stored and analyzed")
    func backendKilledDuringTheAnalysis() async throws {
        let (pool, url, drop) = try await TestDatabase.isolatedDatabaseWithURL()
        defer { Task { await drop() } }
        let blast = 12_000
        // The send's analysis waits for the partition as long as it takes this test to catch it
        // waiting (with 2 s, a loaded machine saw the send give up first and store the blast).
        var limits = SendBatcher.Limits()
        limits.statistics.lockTimeoutMilliseconds = 300_000
        _ = try await subscribedStore(pool, users: blast)
        let store = NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false), limits: limits)
        _ = try await Self.send(store, "morning", 1...1)
        let partition = try await pool.withConnection { connection in
            try connection.query(sql: "SELECT tableoid::regclass::text FROM deliveries LIMIT 1").scalar ?? ""
        }
        // The analysis waits for the partition (held elsewhere), so it can be caught doing so.
        let holder = try PostgresConnection(settings: PostgresConnectionSettings(url: url))
        try holder.query(sql: "BEGIN")
        try holder.query(sql: "LOCK TABLE \(partition) IN SHARE UPDATE EXCLUSIVE MODE")
        let first = Task { try await Self.send(store, "blast", 1...blast) }
        var killed = false
        for _ in 0..<12_000 where !killed {
            killed = try await pool.withConnection { connection in
                try connection.query(sql: """
                    SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE datname = current_database() AND query LIKE 'ANALYZE %' AND wait_event_type = 'Lock'
                      AND backend_xid IS NOT NULL
                    """).scalar == "1"
            }
            if !killed { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(killed, "the send's analysis was never seen waiting")
        await #expect(throws: (any Error).self) { _ = try await first.value }
        try holder.query(sql: "ROLLBACK")
        #expect(try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM notifications WHERE id = 'blast'").scalar } == "0")
        #expect(try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM deliveries").scalar } == "1")

        // The bank sends it again: stored whole, and the day analyzed with it.
        guard case .stored(let states, _) = try await Self.send(store, "blast", 1...blast) else {
            Issue.record("the second send was not stored")
            return
        }
        #expect(states.count == blast)
        let counted = try await pool.withConnection { connection in
            try connection.query(sql: "SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass", [partition]).scalar.flatMap(Int.init) ?? 0
        }
        #expect(counted >= blast, "the day's statistics count \(counted) rows after the send sent again")
    }

    @Test("four big sends at once into one day: every one stored whole, one analysis at a time, and the day's statistics catch up with all of them")
    func concurrentBigSends() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        defer { Task { await drop() } }
        let each = 12_000
        let store = try await subscribedStore(pool, users: each)
        let outcomes = try await withThrowingTaskGroup(of: SendOutcome.self) { group in
            for send in 1...4 { group.addTask { try await Self.send(store, "blast-\(send)", 1...each) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for outcome in outcomes {
            guard case .stored(let states, _) = outcome else {
                Issue.record("a send was not stored: \(outcome)")
                continue
            }
            #expect(states.count == each && states.allSatisfy { $0.state == .queued })
        }
        var counted = 0
        for _ in 0..<600 where counted < 4 * each {
            counted = try await pool.withConnection { connection in
                try connection.query(sql: """
                    SELECT reltuples::bigint FROM pg_class WHERE oid = (SELECT tableoid FROM deliveries LIMIT 1)
                    """).scalar.flatMap(Int.init) ?? 0
            }
            if counted < 4 * each { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(counted >= 4 * each, "the day's statistics count \(counted) of \(4 * each) rows")
    }

    @Test("the confidential erasure step probes each confidential notification's deliveries, not every delivery of the day")
    func erasureProbesPerNotification() async throws {
        let (pool, drop) = try await TestDatabase.isolatedDatabase()
        defer { Task { await drop() } }
        let blast = 30_000
        let store = try await subscribedStore(pool, users: blast)
        _ = try await Self.send(store, "blast", 1...blast)
        for code in 1...3 {
            _ = try await store.send(PushNotification(id: "code-\(code)", recipients: ["blast-\(code)"], timeoutSeconds: 600,
                                                      pushContent: PushContent(text: "Code 1234", type: .pinCode), confidential: true))
        }
        let final = PostgresArray.encode(DeliveryState.allCases.filter(\.erasesConfidentialContent).map(\.rawValue))
        let plan = try await pool.withConnection { connection in
            // The statistics of a day a million-recipient blast fills: its key is nearly every
            // row sampled, so the planner expects half the day per notification key. (A sample of
            // 300 rows stands for the 30,000 of a default analysis of a million rows.)
            let partition = try connection.query(sql: "SELECT tableoid::regclass::text FROM deliveries LIMIT 1").scalar ?? ""
            try connection.query(sql: "ALTER TABLE \(partition) ALTER COLUMN notification_key SET STATISTICS 1")
            try connection.query(sql: "ANALYZE \(partition)")
            try connection.query(sql: "PREPARE erase_probe AS " + Sweeps.eraseStatement)
            try connection.query(sql: "BEGIN")
            defer { _ = try? connection.query(sql: "ROLLBACK") }
            try Sweeps.forbidSequentialScans(connection)
            return try connection.query(sql: "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE erase_probe('\(final)')").scalar ?? "[]"
        }
        let read = rowsRead(plan, relationPrefix: "deliveries_p")
        #expect(read <= 100, "one erasure step read \(read) deliveries for three one-recipient codes: \(plan.prefix(3000))")
    }

    /// A notification store on `pool` whose users blast-1…blast-`users` each have an iPhone.
    /// The devices are a fixture, loaded without the pool's statement timeout: in CI's full run,
    /// with the other suites loading the two cores, 30,000 of them (a row trigger each) took
    /// 26 s locally and outlasted the 30 s twice in CI, failing tests about plans, not loads.
    func subscribedStore(_ pool: PostgresPool, users: Int) async throws -> NotificationStore {
        try await TestDatabase.load(pool, script: """
            INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
            SELECT 'bank', 'blast-' || n, 'blast-' || n, 'phone', 'IOS', md5(n::text) || md5((-n)::text)
            FROM generate_series(1, \(users)) AS n
            """)
        return NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
    }

    /// Sends news `id` to blast-`users`.
    static func send(_ store: NotificationStore, _ id: String, _ users: ClosedRange<Int>) async throws -> SendOutcome {
        try await store.send(PushNotification(id: id, recipients: users.map { "blast-\($0)" }, timeoutSeconds: 600,
                                              pushContent: PushContent(text: "News", type: .message)))
    }

    /// Rows the plan's scans of relations named `relationPrefix…` produced or filtered out.
    func rowsRead(_ plan: String, relationPrefix: String) -> Double {
        var read = 0.0
        func walk(_ node: Any) {
            if let object = node as? [String: Any] {
                if let relation = object["Relation Name"] as? String, relation.hasPrefix(relationPrefix) {
                    let loops = (object["Actual Loops"] as? Double) ?? 1
                    read += (((object["Actual Rows"] as? Double) ?? 0) + ((object["Rows Removed by Filter"] as? Double) ?? 0)) * loops
                }
                object.values.forEach(walk)
            } else if let array = node as? [Any] {
                array.forEach(walk)
            }
        }
        if let json = try? JSONSerialization.jsonObject(with: Data(plan.utf8)) { walk(json) }
        return read
    }
}
