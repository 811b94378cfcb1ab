import Foundation
import PigeonCore
import PigeonDomain
@testable import PigeonServer
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import PostgresDriver
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The gateway while its database goes away: the primary restarted. The test starts its own
/// primary and streaming standby (`scripts/pg-pair.sh`, synchronous replication) and a gateway
/// whose `dbUrl` names both. Failover — a switchover, the primary killed with -9 — is drilled on
/// the HA stack banks run, Patroni (``PatroniDrillTests``).
@Suite("Database restart and failover", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL and PostgreSQL's binaries"), .enabled(if: TestTier.runsSystem, "system tier (PostgreSQL restarted and failed over): PIGEON_TEST_TIER"))
struct DatabaseFailoverTests {
    static let script = TestDatabase.migrationsDirectory.deletingLastPathComponent().appendingPathComponent("scripts/pg-pair.sh").path
    static let batchSize = 500
    static let workers = 2

    @Test("PostgreSQL restarted during a fan-out and concurrent sends: every send answered, none acknowledged lost, every recipient pushed, nothing manual")
    func restartDuringFanOut() async throws {
        try await scenario(recipients: 20_000, disruptAfter: 4_000) { pair in
            _ = try await ChildProcess.run(Self.script, ["restart-primary", pair.name, String(pair.primaryPort)])
        }
    }

    struct Pair: Sendable {
        var name: String
        var primaryPort: Int
        var standbyPort: Int
        var url: String { "postgresql://postgres@127.0.0.1:\(primaryPort),127.0.0.1:\(standbyPort)/postgres" }
    }

    /// A fan-out to `recipients` users with small sends arriving alongside; `disrupt` runs once
    /// `disruptAfter` pushes went out. Then: every send got an answer, every acknowledged one is
    /// stored, every recipient was pushed, and repeats stay within what was in flight.
    func scenario(recipients: Int, disruptAfter: Int, disrupt: @Sendable (Pair) async throws -> Void) async throws {
        guard let primaryPort = LoopbackPort.free(), let standbyPort = LoopbackPort.free() else {
            Issue.record("no free ports")
            return
        }
        let pair = Pair(name: TestDatabase.unique("pair"), primaryPort: primaryPort, standbyPort: standbyPort)
        _ = try await ChildProcess.run(Self.script, ["start", pair.name, String(primaryPort), String(standbyPort)])
        let fixture = try await SimulatorFixture.start()
        let simulator = fixture.simulator
        let gateway = try await GatewayProcess.start(configuration: """
            dbUrl = \(pair.url)
            dbPoolSize = 6
            migrationsPath = \(TestDatabase.migrationsDirectory.path)
            maxRequestBytes = 16777216
            deliveryBatchSize = \(Self.batchSize)
            deliveryWorkers = \(Self.workers)
            deliveryLeaseSeconds = 5
            logLevel = info
            \(simulator.configurationSnippet)
            """)
        let pool = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: pair.url), size: 2), logger: .silent)
        defer {
            gateway.signal(SIGKILL)
            pool.close()
            fixture.stop()
            _ = try? ChildProcess.runBlocking(Self.script, ["stop", pair.name], allowFailure: true)
        }

        let users = try await DeliveryResilienceTests.subscribe(count: recipients, prefix: "fo", in: pool)
        try await SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
            .subscribe(bankClientId: "bank", userId: "fo-small", deviceId: "phone", platform: .android, pushToken: Self.smallToken)
        let fanOut = try await DeliveryResilienceTests.post(gateway.baseURL + GatewayHarness.soapPath, GatewayHarness.envelope(
            GatewayHarness.sendNotification(id: "fan-out", recipients: users, timeout: "3600")))
        #expect(fanOut.contains("<status>OK</status>"), "log: \(gateway.log.suffix(3000))")

        // Small sends keep arriving, before, during and after the disruption.
        let sender = SmallSender(url: gateway.baseURL + GatewayHarness.soapPath)
        let sending = Task { await sender.run() }
        #expect(try await DeliveryResilienceTests.waitUntil(seconds: 120) { DeliveryResilienceTests.pushCount(simulator) >= disruptAfter })
        let atDisruption = DeliveryResilienceTests.pushCount(simulator)
        try await disrupt(pair)
        // Sends go on until some are acknowledged by the recovered database.
        let acknowledgedBefore = await sender.acknowledged.count
        _ = try await DeliveryResilienceTests.waitUntil(seconds: 60) { await sender.acknowledged.count >= acknowledgedBefore + 20 }
        await sender.stop()
        await sending.value
        let acknowledged = await sender.acknowledged
        let unanswered = await sender.unanswered
        #expect(unanswered.isEmpty, "sends without an answer: \(unanswered.prefix(5)); log: \(gateway.log.suffix(5000))")
        #expect(acknowledged.count >= acknowledgedBefore + 20, "no send acknowledged after the disruption; log: \(gateway.log.suffix(3000))")

        // Every recipient of the fan-out is pushed, by the same gateway, nothing restarted by hand.
        let fanOutDone = try await DeliveryResilienceTests.waitUntil(seconds: 300, every: .milliseconds(200)) {
            let tokens = Set(simulator.apns.deliveries.map(\.deviceToken) + simulator.fcm.deliveries.map(\.registrationToken))
            return tokens.count >= recipients + (acknowledged.isEmpty ? 0 : 1)
        }
        #expect(fanOutDone, "log: \(gateway.log.suffix(3000))")
        #expect(atDisruption < recipients, "the fan-out finished before the disruption; the test proves nothing")
        #expect(gateway.isRunning)

        // Every acknowledged send is stored, with its delivery.
        let stored = try await pool.withConnection(idempotent: true) { connection in
            Set(try connection.query(sql: "SELECT id FROM notifications WHERE id LIKE 'small-%'").rows.compactMap { $0.text(0) })
        }
        let lost = acknowledged.subtracting(stored)
        #expect(lost.isEmpty, "acknowledged sends lost: \(lost.sorted().prefix(10))")
        // A push repeats only if it was in flight (claimed, not yet recorded) when the database
        // went: at most a batch per worker.
        let fanOutPushes = simulator.apns.deliveries.filter { $0.deviceToken != Self.smallToken }.count
            + simulator.fcm.deliveries.filter { $0.registrationToken != Self.smallToken }.count
        let duplicates = fanOutPushes - recipients
        #expect(duplicates <= Self.batchSize * Self.workers, "\(duplicates) duplicates")
        let refused = await sender.refused
        print("database disruption at \(atDisruption) of \(recipients) pushes: \(duplicates) repeated, small sends \(acknowledged.count) acknowledged, \(refused) refused with an error")
        // The last results are recorded shortly after their pushes.
        let recorded = try await DeliveryResilienceTests.waitUntil(seconds: 60) {
            try await pool.withConnection(idempotent: true) { connection in
                try connection.query(sql: "SELECT count(*) FROM deliveries WHERE state = 'SENT' AND user_id <> 'fo-small'").scalar.flatMap(Int.init)
            } == recipients
        }
        #expect(recorded)
        gateway.signal(SIGTERM)
        #expect(await gateway.waitForExit() == 0)
    }

    /// The push token of `fo-small`, the user of the small sends.
    static let smallToken = "fcm-fo-small"
}

/// Sends small notifications to `fo-small`, four at a time, until stopped; remembers which ids
/// were acknowledged (`<status>OK</status>`) and which got no answer at all.
actor SmallSender {
    let url: String
    private(set) var acknowledged: Set<String> = []
    private(set) var refused = 0
    private(set) var unanswered: [String] = []
    private var stopped = false
    private var next = 0

    init(url: String) {
        self.url = url
    }

    func stop() { stopped = true }

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { await self.loop() }
            }
        }
    }

    private func loop() async {
        while !stopped {
            next += 1
            let id = "small-\(next)"
            let envelope = GatewayHarness.envelope(GatewayHarness.sendNotification(id: id, recipients: ["fo-small"], timeout: "3600"))
            do {
                let reply = try await DeliveryResilienceTests.post(url, envelope)
                if reply.contains("<status>OK</status>") { acknowledged.insert(id) } else { refused += 1 }
            } catch {
                unanswered.append("\(id): \(error)")
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}
