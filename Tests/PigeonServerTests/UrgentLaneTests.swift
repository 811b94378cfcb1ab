import Foundation
import PigeonDomain
@testable import PigeonServer
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import Testing

/// One-time codes against a blast, end to end: SOAP → PostgreSQL → the engine's lanes → HTTP/2
/// and TLS → `pigeon simulate` answering slowly. No assertion rests on a time budget: each waits
/// for a state, and the blast is held far longer than any wait.
@Suite("Urgent lane end to end", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"), .enabled(if: TestTier.runsSystem, "system tier (streams held for minutes): PIGEON_TEST_TIER"))
struct UrgentLaneTests {
    /// `count` users `blast-1…`, each with one iPhone, inserted at once.
    static func blastAudience(_ setting: EndToEnd, count: Int) async throws {
        try await TestDatabase.load(setting.database.pool, script: """
            INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
            SELECT 'bank', 'blast-' || n, 'blast-' || n, 'phone', 'IOS', md5(n::text) FROM generate_series(1, \(count)) AS n
            """)
    }

    func count(_ setting: EndToEnd, _ sql: String) async throws -> Int {
        try await setting.database.pool.withConnection { Int(try $0.query(sql: sql).scalar ?? "0") ?? 0 }
    }

    func waitUntil(seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    @Test("an urgent send overtakes a blast whose pushes fill every stream: it is SENT while every blast push is still unanswered")
    func urgentOvertakesBlast() async throws {
        let setting = try await EndToEnd.start { $0.delivery.shutdownGraceSeconds = 2 }
        defer { setting.fixture.stop() }
        try await Self.blastAudience(setting, count: 1000)
        try await setting.subscriptions.subscribe(bankClientId: "bank", userId: "payer", deviceId: "iphone", platform: .ios, pushToken: "c0de")
        // The blast's pushes are answered after ten minutes: every stream they reach stays taken.
        setting.simulator.apns.setFaults(FaultRules(["*": .init(.delay(milliseconds: 600_000)), "c0de": .init(.delay(milliseconds: 1))]))
        let blast = try await setting.harness.soap(GatewayHarness.sendNotification(id: "blast", recipients: (1...1000).map { "blast-\($0)" }, timeout: "3600"))
        #expect(blast.status == 200)
        // The simulator holds every blast push it has received: wait until the blast's connections
        // (2 × 129 streams by default) are full.
        #expect(try await waitUntil(seconds: 120) { setting.simulator.apns.deliveries.count >= 250 })
        let code = try await setting.harness.soap(GatewayHarness.sendNotification(id: "code", recipients: ["payer"], extra: "<priority>10</priority>"))
        #expect(code.text.contains("<value>QUEUED</value>"))
        #expect(try await waitUntil(seconds: 120) {
            try await setting.store.deliveryStatus(id: "code") == [RecipientState(user: "payer", state: .sent)]
        })
        #expect(setting.simulator.apns.deliveries.contains { $0.deviceToken == "c0de" })
        // Not one blast push has been answered or given up on (a push client's 30-second time-out
        // would free streams): the code went past all of them.
        #expect(try await count(setting, """
            SELECT count(*) FROM deliveries WHERE user_id LIKE 'blast-%' AND (state <> 'QUEUED' OR last_error IS NOT NULL)
            """) == 0)
        await setting.harness.gateway.shutdown()
        await setting.database.drop()
    }

    @Test("a code with a 3 s timeout behind 1,000 pushes to a service that holds them is never pushed, and is reported expired once")
    func staleCodeIsNeverPushed() async throws {
        let setting = try await EndToEnd.start {
            $0.delivery.shutdownGraceSeconds = 2
            $0.expirySweepIntervalSeconds = 1
        }
        defer { setting.fixture.stop() }
        try await Self.blastAudience(setting, count: 1000)
        try await setting.subscriptions.subscribe(bankClientId: "bank", userId: "payer", deviceId: "iphone", platform: .ios, pushToken: "c0de")
        // Every push is answered after ten minutes: the streams the blast takes stay taken, and
        // the code (3 s to live) can never get one.
        setting.simulator.apns.setFaults(FaultRules(["*": .init(.delay(milliseconds: 600_000))]))
        _ = try await setting.harness.soap(GatewayHarness.sendNotification(id: "blast", recipients: (1...1000).map { "blast-\($0)" }, timeout: "3600"))
        #expect(try await waitUntil(seconds: 120) { setting.simulator.apns.deliveries.count >= 250 })
        // The code is in the blast's lane (no urgent priority).
        let code = try await setting.harness.soap(GatewayHarness.sendNotification(id: "code", recipients: ["payer"], timeout: "3"))
        #expect(code.text.contains("<value>QUEUED</value>"))
        #expect(try await waitUntil(seconds: 180) {
            try await setting.store.deliveryStatus(id: "code") == [RecipientState(user: "payer", state: .expired)]
        })
        #expect(!setting.simulator.apns.deliveries.contains { $0.deviceToken == "c0de" })
        #expect(try await count(setting, """
            SELECT count(*) FROM outbox WHERE kind = 'reportNotificationExpired' AND payload->>'notificationId' = 'code'
            """) == 1)
        await setting.harness.gateway.shutdown()
        await setting.database.drop()
    }
}

/// A push service changing its limits under the engine: nothing it accepted is sent again, and
/// nothing is lost.
@Suite("Push service limits end to end", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"), .enabled(if: TestTier.runsSystem, "system tier (streams held for minutes): PIGEON_TEST_TIER"))
struct PushServiceLimitTests {
    @Test("APNs lowering a connection's stream limit to 1, or sending GOAWAY: every push arrives exactly once", arguments: [
        ("lowered stream limit", FaultRules.Fault.lowerStreamLimit, 2),
        ("GOAWAY", FaultRules.Fault.goAway, 3),
    ])
    func limitsChange(label: String, fault: FaultRules.Fault, times: Int) async throws {
        let setting = try await EndToEnd.start { $0.delivery.shutdownGraceSeconds = 2 }
        defer { setting.fixture.stop() }
        try await UrgentLaneTests.blastAudience(setting, count: 600)
        setting.simulator.apns.setFaults(FaultRules(["*": .init(fault, times: times)]))
        _ = try await setting.harness.soap(GatewayHarness.sendNotification(id: "limits", recipients: (1...600).map { "blast-\($0)" }))
        let test = UrgentLaneTests()
        #expect(try await test.waitUntil(seconds: 180) {
            try await test.count(setting, "SELECT count(*) FROM deliveries WHERE state = 'SENT'") == 600
        }, "\(label)")
        let tokens = setting.simulator.apns.deliveries.map(\.deviceToken)
        #expect(Set(tokens).count == 600, "\(label)")
        // Nothing the service took is sent again: a GOAWAY's streams up to its last stream id
        // are answered before the connection closes, the ones after it were never taken.
        #expect(tokens.count == 600, "\(label): \(tokens.count - Set(tokens).count) pushes arrived twice")
        await setting.harness.gateway.shutdown()
        await setting.database.drop()
    }

    @Test("one service answering 503 slowly leaves another's pushes flowing: every iPhone is SENT while not one Android push has been answered")
    func slowServiceLeavesOthersFlowing() async throws {
        let setting = try await EndToEnd.start { $0.delivery.shutdownGraceSeconds = 2 }
        defer { setting.fixture.stop() }
        // 4,000 users, every other one with an Android phone: far more than the engine holds at
        // once, so the iPhones can only all be reached if the Android deliveries give way.
        try await TestDatabase.load(setting.database.pool, script: """
            INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
            SELECT 'bank', 'mix-' || n, 'mix-' || n, 'phone', CASE WHEN n % 2 = 0 THEN 'ANDROID' ELSE 'IOS' END, md5(n::text)
            FROM generate_series(1, 4000) AS n
            """)
        // FCM answers every push with 503 after ten minutes.
        setting.simulator.fcm.setFaults(FaultRules(["*": .init(.unavailableAfter(milliseconds: 600_000))]))
        let blast = try await setting.harness.soap(GatewayHarness.sendNotification(
            id: "mix", recipients: (1...4000).map { "mix-\($0)" }, timeout: "3600"))
        #expect(blast.status == 200)
        let test = UrgentLaneTests()
        #expect(try await test.waitUntil(seconds: 180) {
            try await test.count(setting, "SELECT count(*) FROM deliveries WHERE user_id LIKE 'mix-%' AND state = 'SENT'") == 2000
        })
        #expect(try await test.count(setting, """
            SELECT count(*) FROM deliveries d JOIN devices v ON v.user_folded = d.user_folded
            WHERE d.user_id LIKE 'mix-%' AND v.platform = 'IOS' AND d.state <> 'SENT'
            """) == 0)
        // Not one Android push was answered or given up on (the push client's 30-second time-out
        // would have given them a last error): the iPhones did not wait for FCM.
        #expect(try await test.count(setting, """
            SELECT count(*) FROM deliveries d JOIN devices v ON v.user_folded = d.user_folded
            WHERE d.user_id LIKE 'mix-%' AND v.platform = 'ANDROID' AND (d.state <> 'QUEUED' OR d.last_error IS NOT NULL)
            """) == 0)
        await setting.harness.gateway.shutdown()
        await setting.database.drop()
    }
}
