import Foundation
import PigeonBankStub
import PigeonDomain
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// CONTRACT §10 "The bank hears at once when a notification reaches nobody", through the gateway:
/// the simulator answers, the bank stub hears `reportNotificationExpired` long before the
/// timeout, once, and not again when the timeout passes.
@Suite("Reached nobody: the bank hears at once", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct ReachedNobodyReportTests {
    /// An APNs token of its own for each number.
    static func token(_ number: Int) -> String { String(format: "%064x", 0xC0DE_0000 + number) }

    static func code(_ id: String, to user: String) -> String {
        GatewayHarness.sendNotification(id: id, recipients: [user], timeout: "120", extra: "<priority>10</priority>")
    }

    @Test("a dead token (410), a bad token (400), a push refused for good and a user without a phone are reported within the timeout, once; one dead and one good phone is not; the timeout reports only the unacknowledged push")
    func everyWayToReachNobody() async throws {
        let users = ["gone", "garbled", "refused", "nobody", "mixed"]
        let flow = try await DeviceFlowHarness(stub: .init(bankClients: ["bank"], authorizedUsers: Set(users))) { $0.expirySweepIntervalSeconds = 1 }
        _ = try await flow.register(user: "gone", device: "g", token: Self.token(1))
        _ = try await flow.register(user: "garbled", device: "b", token: Self.token(2))
        _ = try await flow.register(user: "refused", device: "r", token: Self.token(3))
        _ = try await flow.register(user: "mixed", device: "old", token: Self.token(4))
        _ = try await flow.register(user: "mixed", device: "new", token: Self.token(5))
        flow.simulator.simulator.apns.setFaults(FaultRules([
            Self.token(1): .init(.unregistered), Self.token(2): .init(.badDeviceToken),
            Self.token(3): .init(.rejected), Self.token(4): .init(.unregistered),
        ]))
        for user in users {
            let reply = try await flow.gateway.soap(Self.code("code-\(user)", to: user))
            #expect(reply.status == 200, "\(reply.text.prefix(400))")
        }
        // Four codes reached nobody: four reports, while every timeout is two minutes away.
        #expect(try await flow.waitUntil(seconds: 60) { flow.stub.reports.count >= 4 })
        #expect(try await flow.waitUntil(seconds: 60) {
            try await flow.count("SELECT count(*) FROM deliveries WHERE user_id = 'mixed' AND state = 'SENT'") == 1
        })
        #expect(try await flow.waitUntil(seconds: 60) { try await flow.count("SELECT count(*) FROM outbox") == 0 })
        let early = flow.stub.reports
        #expect(early.count == 4, "\(early)")
        for report in early {
            #expect(report.operation == "reportNotificationExpired" && report.users == [String(report.notificationId.dropFirst("code-".count))], "\(report)")
        }
        #expect(Set(early.map(\.notificationId)) == ["code-gone", "code-garbled", "code-refused", "code-nobody"])
        #expect(try await flow.count("SELECT count(*) FROM notifications WHERE expires_at <= now()") == 0)
        let states = try await flow.gateway.soap("<inb:getDeliveryStatus><id>code-refused</id></inb:getDeliveryStatus>")
        #expect(states.text.contains("<key>refused</key><value>SENDING_FAILED</value>"), "\(states.text)")
        // The console tells these apart from expiries at the timeout.
        let recipients = try await ConsoleStore(pool: flow.database.pool, identifiers: UserIdentifiers(caseInsensitive: false))
            .recipients(notificationId: "code-gone", offset: 0, limit: 10)
        #expect(recipients?.page.first?.reportedEarlyAt != nil)

        // Every timeout passes (set in the database, not waited for): only mixed's code, pushed
        // to a phone but never acknowledged, is reported now.
        _ = try await flow.count("""
            WITH n AS (UPDATE notifications SET expires_at = now() - interval '1 second' RETURNING key),
                 d AS (UPDATE deliveries SET expires_at = now() - interval '1 second'
                       WHERE notification_key IN (SELECT key FROM n) RETURNING 1)
            SELECT count(*) FROM d
            """)
        #expect(try await flow.waitUntilReportsSettled())
        let all = flow.stub.reports
        #expect(all.count == 5, "\(all)")
        #expect(all.last?.notificationId == "code-mixed" && all.last?.users == ["mixed"] && all.last?.operation == "reportNotificationExpired")
        let refused = try await flow.gateway.soap("<inb:getDeliveryStatus><id>code-refused</id></inb:getDeliveryStatus>")
        #expect(refused.text.contains("<key>refused</key><value>SENDING_FAILED</value>"), "\(refused.text)")
        let metrics = try await flow.gateway.request("GET", "/metrics").text
        #expect(metrics.contains(#"pigeon_bank_reports_total{kind="reportNotificationExpired",reason="reached_nobody",result="sent"} 4"#), "\(metrics.split(separator: "\n").filter { $0.contains("bank_reports") })")
        #expect(metrics.contains(#"pigeon_bank_reports_total{kind="reportNotificationExpired",reason="timeout",result="sent"} 1"#))
        await flow.stop()
    }

    @Test("two gateways pushing codes to dead tokens while the bank is down: every code reported once, after the bank is back")
    func twoGatewaysThroughAnOutage() async throws {
        let users = (0..<10).map { "dead-\($0)" }
        let flow = try await DeviceFlowHarness(stub: .init(bankClients: ["bank"], authorizedUsers: Set(users)))
        let (simulator, url, stubURL) = (flow.simulator.simulator, flow.database.url, flow.stub.serviceURL)
        let second = try await GatewayHarness {
            $0.point(at: simulator, database: url)
            $0.bankProxyURL = stubURL
            $0.bankProxyTimeoutSeconds = 2
        }
        var faults: [String: FaultRules.Rule] = [:]
        for (index, user) in users.enumerated() {
            _ = try await flow.register(user: user, device: "p", token: Self.token(100 + index))
            faults[Self.token(100 + index)] = .init(.unregistered)
        }
        simulator.apns.setFaults(FaultRules(faults))
        flow.stub.setMode(.down)
        for (index, user) in users.enumerated() {
            let gateway = index.isMultiple(of: 2) ? flow.gateway : second
            #expect(try await gateway.soap(Self.code("dead-code-\(index)", to: user)).status == 200)
        }
        // Every code reached nobody and its report waits in the outbox while the bank is down.
        #expect(try await flow.waitUntil(seconds: 60) {
            try await flow.count("SELECT count(*) FROM deliveries WHERE state = 'INVALID_SUBSCRIPTION' AND reported_early_at IS NOT NULL") == 10
        })
        #expect(try await flow.count("SELECT count(*) FROM outbox WHERE payload->>'reason' = 'reachedNobody'") == 10)
        #expect(flow.stub.reports.isEmpty)
        flow.stub.setMode(.normal)
        #expect(try await flow.waitUntil(seconds: 120) { try await flow.count("SELECT count(*) FROM outbox") == 0 })
        let reports = flow.stub.reports
        #expect(reports.count == 10, "\(reports)")
        #expect(Set(reports.map(\.notificationId)).count == 10)
        for report in reports {
            #expect(report.users == ["dead-" + String(report.notificationId.dropFirst("dead-code-".count))], "\(report)")
        }
        await second.gateway.shutdown()
        await flow.stop()
    }
}
