import Foundation
import PigeonBankStub
import PigeonCore
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// Expiry sweeps, subscription hygiene and the durable outbox of reports to the bank.
@Suite("Reports to the bank", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct ReportsTests {
    static let stub = BankStub.Configuration(bankClients: ["bank"], authorizedUsers: ["alice", "bob", "carol"])
    static let carolsToken = String(repeating: "cd", count: 32)

    @Test("timeout passed: undelivered recipients become EXPIRED (retries stop), one report per notification lists them")
    func expiry() async throws {
        let flow = try await DeviceFlowHarness(stub: Self.stub) { $0.expirySweepIntervalSeconds = 1 }
        let alice = try await flow.register(user: "alice")
        _ = try await flow.register(user: "bob", device: "b")
        _ = try await flow.register(user: "carol", device: "c", token: Self.carolsToken)
        // Apple keeps failing carol's pushes: her delivery stays QUEUED, retrying, until it expires.
        flow.simulator.simulator.apns.setFaults(FaultRules([Self.carolsToken: .init(.serviceUnavailable)]))
        _ = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "exp-1", recipients: ["alice", "bob", "carol", "nobody"], timeout: "3600"))
        _ = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "exp-2", recipients: ["bob"], timeout: "3600"))
        _ = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "later", recipients: ["bob"], timeout: "3600"))
        #expect(try await flow.call("POST", "/api/v1/notifications/exp-1/delivered", bearer: alice).json["state"] == "DELIVERED")
        // Carol's push was tried and failed; then the timeouts of exp-1 and exp-2 pass — set in
        // the database, not waited for, so a loaded machine cannot make the test race the clock.
        #expect(try await flow.waitUntil(seconds: 60) {
            try await flow.count("SELECT count(*) FROM deliveries WHERE user_id = 'carol' AND attempts >= 1") == 1
        })
        _ = try await flow.count("""
            WITH n AS (UPDATE notifications SET expires_at = now() - interval '1 second'
                       WHERE id IN ('exp-1', 'exp-2') RETURNING key),
                 d AS (UPDATE deliveries SET expires_at = now() - interval '1 second'
                       WHERE notification_key IN (SELECT key FROM n) RETURNING 1)
            SELECT count(*) FROM d
            """)

        #expect(try await flow.waitUntil(seconds: 60) { flow.stub.reports.count >= 3 })
        #expect(try await flow.waitUntilReportsSettled())
        let reports = flow.stub.reports
        // "nobody" has no phone: the bank heard of it at the send (CONTRACT §10), not again now.
        #expect(reports.count == 3, "\(reports)")
        #expect(reports.filter { $0.notificationId == "exp-1" }.map(\.users).sorted { $0.count < $1.count } == [["nobody"], ["bob", "carol"]])
        #expect(reports.first { $0.notificationId == "exp-2" }?.users == ["bob"])
        #expect(reports.allSatisfy { $0.operation == "reportNotificationExpired" })
        let states = try await flow.gateway.soap("<inb:getDeliveryStatus><id>exp-1</id></inb:getDeliveryStatus>")
        for (user, state) in [("alice", "DELIVERED"), ("bob", "EXPIRED"), ("carol", "EXPIRED"), ("nobody", "INVALID_SUBSCRIPTION")] {
            #expect(states.text.contains("<key>\(user)</key><value>\(state)</value>"), "\(user): \(states.text)")
        }
        let later = try await flow.gateway.soap("<inb:getDeliveryStatus><id>later</id></inb:getDeliveryStatus>")
        #expect(later.text.contains("<key>bob</key><value>SENT</value>"))
        #expect(try await flow.count("SELECT count(*) FROM outbox") == 0)
        await flow.stop()
    }

    @Test("a report the bank refuses past reportMaxAgeHours is dead-lettered once; pigeon outbox lists it and sends it again")
    func deadLetters() async throws {
        let flow = try await DeviceFlowHarness(stub: Self.stub) { $0.reportMaxAgeHours = 1 }
        flow.stub.setMode(.down)
        _ = try await flow.database.pool.withConnection { connection in
            try connection.query(sql: """
                INSERT INTO outbox (kind, payload, created_at) VALUES
                    ('pushIsOpened', '{"notificationId": "old-1", "users": ["alice"]}', now() - interval '2 hours'),
                    ('pushIsOpened', '{"notificationId": "young-1", "users": ["bob"]}', now())
                """)
        }
        #expect(try await flow.waitUntil(seconds: 120) { try await flow.count("SELECT count(*) FROM outbox_dead") == 1 })
        #expect(try await flow.count("SELECT count(*) FROM outbox_dead WHERE payload->>'notificationId' = 'old-1' AND last_error IS NOT NULL") == 1)
        // The young one keeps being retried.
        #expect(try await flow.count("SELECT count(*) FROM outbox WHERE payload->>'notificationId' = 'young-1'") == 1)
        #expect(flow.gateway.logs.records.filter { $0.message.contains("dead-lettered") }.count == 1)

        let config = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("outbox") + ".conf")
        try Data("dbUrl = \(flow.database.url)\nmigrationsPath = \(TestDatabase.migrationsDirectory.path)\nlogLevel = warning\n".utf8).write(to: config)
        defer { try? FileManager.default.removeItem(at: config) }
        let pigeon = GatewayProcess.executable.path
        let listed = String(decoding: try await ChildProcess.run(pigeon, ["outbox", "list", "--config", config.path]), as: UTF8.self)
        // Both: the waiting report and the dead letter, each under its heading.
        let sections = listed.components(separatedBy: "Dead letters (1):")
        #expect(sections.count == 2, "\(listed)")
        #expect(sections.first?.contains("Waiting to be sent (1):") == true && sections.first?.contains("pushIsOpened\tyoung-1\tbob") == true, "\(listed)")
        #expect(sections.last?.contains("pushIsOpened\told-1\talice") == true && sections.last?.contains("young-1") == false, "\(listed)")
        flow.stub.setMode(.normal)
        // An id that is no dead letter is named, and the command fails.
        let deadId = try await flow.count("SELECT max(id) FROM outbox_dead")
        let unknown = try ProgramRun.run(pigeon, ["outbox", "retry", "--config", config.path, "--id", "\(deadId + 1000)"], errorsToOutput: true)
        let said = String(decoding: unknown.output, as: UTF8.self)
        #expect(unknown.status == 1 && said.contains("not dead letters") && said.contains("\(deadId + 1000)"), "\(unknown.status): \(said)")
        #expect(try await flow.count("SELECT count(*) FROM outbox_dead") == 1)
        let retried = String(decoding: try await ChildProcess.run(pigeon, ["outbox", "retry", "--config", config.path, "--all", "--reason", "bank proxy fixed"]), as: UTF8.self)
        #expect(retried.contains("re-queued 1 report"))
        // The console's audit trail says who ran it, why, and what moved.
        #expect(try await flow.count("""
            SELECT count(*) FROM console_audit WHERE action = 'outbox-retry' AND operator LIKE 'os:%' AND reason = 'bank proxy fixed'
            AND target = 'all dead letters' AND outcome = 're-queued \(deadId)'
            """) == 1)
        #expect(try await flow.waitUntil(seconds: 120) { flow.stub.reports.contains { $0.notificationId == "old-1" } })
        #expect(try await flow.count("SELECT count(*) FROM outbox_dead") == 0)
        #expect(try await flow.waitUntil(seconds: 120) { try await flow.count("SELECT count(*) FROM outbox") == 0 })
        let empty = String(decoding: try await ChildProcess.run(pigeon, ["outbox", "list", "--config", config.path]), as: UTF8.self)
        #expect(empty == "Waiting to be sent (0):\nnone\n\nDead letters (0):\nnone\n", "\(empty)")
        await flow.stop()
    }

    @Test("the bank down, answering garbage, then too slow while reports wait: retried with back-off, every report arrives after")
    func bankDown() async throws {
        let flow = try await DeviceFlowHarness(stub: Self.stub) {
            $0.expirySweepIntervalSeconds = 1
            $0.bankProxyTimeoutSeconds = 2
        }
        let alice = try await flow.register(user: "alice")
        flow.stub.setMode(.down)
        for index in 0..<5 {
            _ = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "down-\(index)", recipients: ["alice"], timeout: "600"))
            #expect(try await flow.call("POST", "/api/v1/notifications/down-\(index)/opened", bearer: alice).json["state"] == "READ")
        }
        // Every report was tried, refused, and rescheduled with the reason.
        #expect(try await flow.waitUntil(seconds: 120) {
            try await flow.count("SELECT count(*) FROM outbox WHERE attempts >= 1 AND last_error IS NOT NULL") == 5
        })
        #expect(flow.stub.calls >= 5)
        #expect(flow.stub.reports.isEmpty)
        let metrics = try await flow.gateway.request("GET", "/metrics").text
        #expect(metrics.contains("pigeon_bank_reports_total{kind=\"pushIsOpened\",result=\"retry\"}"))
        // A bank answering garbage, then too slowly (3 s against a 2 s timeout), takes nothing either.
        for mode in [BankStub.Mode.garbage, .slow(milliseconds: 3000)] {
            flow.stub.setMode(mode)
            let calls = flow.stub.calls
            #expect(try await flow.waitUntil(seconds: 120) { flow.stub.calls >= calls + 5 }, "\(mode)")
            #expect(try await flow.count("SELECT count(*) FROM outbox") == 5)
        }
        flow.stub.setMode(.normal)
        let all = Set((0..<5).map { "down-\($0)" })
        #expect(try await flow.waitUntil(seconds: 120) { Set(flow.stub.reports.map(\.notificationId)) == all })
        // The stub may have taken reports whose answers came too late: the gateway sends those
        // again (at least once), and only then are they gone from the outbox.
        #expect(try await flow.waitUntil(seconds: 120) { try await flow.count("SELECT count(*) FROM outbox") == 0 })
        await flow.stop()
    }

    @Test("two gateways sweeping one database: one report per notification")
    func twoSweepers() async throws {
        let flow = try await DeviceFlowHarness(stub: Self.stub) { $0.expirySweepIntervalSeconds = 1 }
        let (simulator, url, stubURL) = (flow.simulator.simulator, flow.database.url, flow.stub.serviceURL)
        let second = try await GatewayHarness {
            $0.point(at: simulator, database: url)
            $0.bankProxyURL = stubURL
            $0.expirySweepIntervalSeconds = 1
        }
        _ = try await flow.register(user: "alice")
        _ = try await flow.register(user: "bob", device: "b")
        for index in 0..<20 {
            // Every send stored, both users QUEUED: a report missing later is then the sweeps'.
            let reply = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "two-\(index)", recipients: ["alice", "bob"], timeout: "1"))
            #expect(reply.status == 200 && reply.text.components(separatedBy: "<value>QUEUED</value>").count == 3,
                    "send two-\(index): \(reply.status) \(reply.text.prefix(600))")
        }
        #expect(try await flow.waitUntil(seconds: 120) { flow.stub.reports.count >= 20 })
        // Both gateways' sweeps are done with every notification and their outboxes are empty:
        // a duplicate would have been written, and sent, by now.
        #expect(try await flow.waitUntilReportsSettled())
        let reports = flow.stub.reports
        let stored = try await flow.database.pool.withConnection { connection in
            try connection.query(sql: """
                SELECT n.id || ' ' || n.expiry_handled || ' ' || string_agg(d.state, ',' ORDER BY d.position)
                FROM notifications n JOIN deliveries d ON d.notification_key = n.key
                WHERE n.id LIKE 'two-%' GROUP BY n.id, n.expiry_handled
                """).rows.compactMap { $0.text(0) }
        }
        #expect(reports.count == 20, "\(reports.count) reports; stored: \(stored.sorted())")
        #expect(Set(reports.map(\.notificationId)).count == 20)
        #expect(reports.allSatisfy { $0.users == ["alice", "bob"] })
        await second.gateway.shutdown()
        await flow.stop()
    }

    @Test("codes expire at their deadline with the sweep an hour away: reported once across two gateways, also when the gateway that took the send is gone")
    func expiryAtDeadline() async throws {
        let flow = try await DeviceFlowHarness(stub: Self.stub) { $0.expirySweepIntervalSeconds = 3600 }
        let (simulator, url, stubURL) = (flow.simulator.simulator, flow.database.url, flow.stub.serviceURL)
        let second = try await GatewayHarness {
            $0.point(at: simulator, database: url)
            $0.bankProxyURL = stubURL
            $0.expirySweepIntervalSeconds = 3600
        }
        _ = try await flow.register(user: "alice")
        // Nobody acknowledges: each code expires when its second is up. Only the deadline
        // watchers can report them (the sweeps ran once at start and wait an hour).
        for index in 0..<10 {
            _ = try await flow.gateway.soap(GatewayHarness.sendNotification(id: "code-\(index)", recipients: ["alice"], timeout: "1"))
        }
        #expect(try await flow.waitUntil(seconds: 60) { flow.stub.reports.count >= 10 })
        // A code taken by the second gateway, which stops at once: the first one reports it,
        // having read its deadline from the database.
        _ = try await second.soap(GatewayHarness.sendNotification(id: "orphan", recipients: ["alice"], timeout: "3"))
        await second.gateway.shutdown()
        #expect(try await flow.waitUntil(seconds: 60) { flow.stub.reports.contains { $0.notificationId == "orphan" } })
        let reports = flow.stub.reports
        #expect(reports.count == 11, "\(reports.count) reports")
        #expect(Set(reports.map(\.notificationId)).count == 11)
        #expect(reports.allSatisfy { $0.operation == "reportNotificationExpired" && $0.users == ["alice"] })
        #expect(try await flow.count("SELECT count(*) FROM deliveries WHERE state <> 'EXPIRED'") == 0)
        await flow.stop()
    }

    @Test("a gateway killed with kill -9 while the bank is down and a report waits: a new process delivers it")
    func reportsSurviveKill() async throws {
        let stub = try BankStub(configuration: Self.stub, port: 0, logger: .silent)
        defer { stub.stop() }
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let configuration = """
            dbUrl = \(database.url)
            migrationsPath = \(TestDatabase.migrationsDirectory.path)
            sbiOutboundWebServiceURL = \(stub.serviceURL)
            bankProxyTimeoutSeconds = 2
            logLevel = info
            """
        let first = try await GatewayProcess.start(configuration: configuration)
        let registered = try await DeviceFlowHarness.call(first.baseURL, "POST", "/api/v1/devices/register", body: DeviceFlowHarness.registration(user: "alice"))
        let alice = try #require(registered.json["authenticationToken"], "\(registered.body)")
        stub.setMode(.down)
        let sent = try await DeliveryResilienceTests.post(first.baseURL + GatewayHarness.soapPath, GatewayHarness.envelope(GatewayHarness.sendNotification(id: "killed-1", recipients: ["alice"])))
        #expect(sent.contains("<status>OK</status>"))
        #expect(try await DeviceFlowHarness.call(first.baseURL, "POST", "/api/v1/notifications/killed-1/opened", bearer: alice).status == 200)
        // The first process tried (the bank was down), then dies without a word.
        let deadline = ContinuousClock.now + .seconds(60)
        while stub.calls < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(stub.calls >= 2)
        first.signal(SIGKILL)
        #expect(await first.waitForExit() == SIGKILL)
        #expect(try await database.pool.withConnection { try $0.query(sql: "SELECT count(*) FROM outbox").scalar } == "1")
        stub.setMode(.normal)

        let successor = try await GatewayProcess.start(configuration: configuration)
        let arrived = ContinuousClock.now + .seconds(40)
        while stub.reports.isEmpty && ContinuousClock.now < arrived { try await Task.sleep(for: .milliseconds(100)) }
        #expect(stub.reports.count == 1, "\(successor.log.suffix(1500))")
        #expect(stub.reports.first?.operation == "pushIsOpened")
        #expect(stub.reports.first?.notificationId == "killed-1")
        #expect(stub.reports.first?.users == ["alice"])
        successor.signal(SIGTERM)
        #expect(await successor.waitForExit() == 0)
        await database.drop()
    }

    @Test("hygiene: subscriptions without a successful delivery for longer than deviceExpiredPeriodMillis are deleted")
    func hygiene() async throws {
        let flow = try await DeviceFlowHarness(stub: Self.stub) {
            $0.expirySweepIntervalSeconds = 1
            $0.deviceExpiredPeriodMillis = 3_600_000
        }
        _ = try await flow.register(user: "alice")
        _ = try await flow.register(user: "bob", device: "b")
        _ = try await flow.register(user: "carol", device: "c")
        _ = try await flow.database.pool.withConnection { connection in
            // Registered two hours ago; bob was reached ten minutes ago.
            try connection.query(sql: """
                UPDATE device_reach SET reached_at = now() - interval '2 hours'
                WHERE device_id IN (SELECT id FROM devices WHERE user_id IN ('alice', 'bob'))
                """)
            try connection.query(sql: """
                UPDATE device_reach SET reached_at = now() - interval '10 minutes'
                WHERE device_id IN (SELECT id FROM devices WHERE user_id = 'bob')
                """)
        }
        // One statement chose every stale device in one snapshot (Sweeps.removeStaleDevices): had
        // bob's or carol's been chosen, it would have gone with alice's. Later sweeps see the
        // same ages, an hour from bob's limit — nothing to wait for.
        #expect(try await flow.waitUntil(seconds: 120) { try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'alice'") == 0 })
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id IN ('bob', 'carol')") == 2)
        await flow.stop()
    }
}
