import Foundation
import PigeonCore
import PigeonDomain
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import PostgresDriver
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// PostgreSQL high availability as banks run it (CONTRACT §10): a Patroni cluster on etcd with
/// synchronous replication (`scripts/patroni.sh`), the gateway on a multi-host `dbUrl` with
/// `target_session_attrs=read-write`. Each drill runs during a 100,000-recipient fan-out and a
/// stream of one-time codes (10 a second, priority 10), and prints what a bank asks of a
/// failover: sends answered OK and lost, deliveries lost, duplicates, and how long until a send is
/// answered OK and a code pushed again.
@Suite("Patroni drills", .serialized, .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"),
       .enabled(if: TestTier.runsSystem, "system tier (a Patroni cluster failing over): PIGEON_TEST_TIER"))
struct PatroniDrillTests {
    static let script = TestDatabase.migrationsDirectory.deletingLastPathComponent().appendingPathComponent("scripts/patroni.sh").path
    static let recipients = 100_000
    static let batchSize = 500
    static let workers = 4

    @Test("patronictl switchover during a fan-out and a stream of codes: no acknowledged send or delivery lost, duplicates within the pushes in flight")
    func switchover() async throws {
        try await drill("switchover") { name in
            _ = try await ChildProcess.run(Self.script, ["switchover", name])
        }
    }

    @Test("the primary's PostgreSQL and Patroni killed with -9 during a fan-out and a stream of codes: the replica takes over, nothing acknowledged lost")
    func killPrimary() async throws {
        try await drill("kill -9") { name in
            _ = try await ChildProcess.run(Self.script, ["kill-primary", name])
        }
    }

    /// Starts cluster `name` on free ports and answers its dbUrl. The script also takes ports
    /// derived from those given (etcd's peers, the REST APIs), which another process may hold:
    /// then it stops what it started and the start is tried again on other ports.
    static func start(_ name: String) async throws -> String {
        var failure: (any Error)?
        for _ in 0..<3 {
            guard let etcd = LoopbackPort.free(), let first = LoopbackPort.free(), let second = LoopbackPort.free() else { continue }
            do {
                let started = try await ChildProcess.run(script, ["start", name, String(etcd), String(first), String(second)])
                if let url = String(decoding: started, as: UTF8.self).split(separator: "\n").last.map(String.init) { return url }
            } catch {
                failure = error
            }
        }
        throw failure ?? LoopbackPort.NoFreePort()
    }

    func drill(_ title: String, disrupt: @Sendable (String) async throws -> Void) async throws {
        let name = TestDatabase.unique("ha")
        let url = try await Self.start(name)
        let fixture = try await SimulatorFixture.start()
        let simulator = fixture.simulator
        let gateway = try await GatewayProcess.start(configuration: """
            dbUrl = \(url)
            dbPoolSize = 6
            migrationsPath = \(TestDatabase.migrationsDirectory.path)
            maxRequestBytes = 16777216
            deliveryBatchSize = \(Self.batchSize)
            deliveryWorkers = \(Self.workers)
            deliveryLeaseSeconds = 5
            logLevel = info
            \(simulator.configurationSnippet)
            """)
        let pool = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: url), size: 2), logger: .silent)
        defer {
            gateway.signal(SIGKILL)
            pool.close()
            fixture.stop()
            _ = try? ChildProcess.runBlocking(Self.script, ["stop", name], allowFailure: true)
        }
        let users = try await DeliveryResilienceTests.subscribe(count: Self.recipients, prefix: "ha", in: pool)
        try await SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
            .subscribe(bankClientId: "bank", userId: CodeStream.user, deviceId: "phone", platform: .android, pushToken: CodeStream.token)
        let fanOut = try await DeliveryResilienceTests.post(gateway.baseURL + GatewayHarness.soapPath, GatewayHarness.envelope(
            GatewayHarness.sendNotification(id: "fan-out", recipients: users, timeout: "3600")))
        #expect(fanOut.contains("<status>OK</status>"), "log: \(gateway.log.suffix(3000))")

        let codes = CodeStream(url: gateway.baseURL + GatewayHarness.soapPath)
        let streaming = Task { await codes.run() }
        #expect(try await DeliveryResilienceTests.waitUntil(seconds: 120) { DeliveryResilienceTests.pushCount(simulator) >= Self.recipients / 5 })
        let atDisruption = DeliveryResilienceTests.pushCount(simulator)
        let disrupted = Date()
        try await disrupt(name)
        // Codes go on until 50 more are answered OK, by the new primary.
        let answeredBefore = await codes.acknowledged.count
        _ = try await DeliveryResilienceTests.waitUntil(seconds: 120) { await codes.acknowledged.count >= answeredBefore + 50 }
        await codes.stop()
        await streaming.value

        let acknowledged = await codes.acknowledged
        let unanswered = await codes.unanswered
        #expect(unanswered.isEmpty, "codes without an answer: \(unanswered.prefix(5)); log: \(gateway.log.suffix(5000))")
        #expect(acknowledged.count >= answeredBefore + 50, "no code answered OK after the \(title); log: \(gateway.log.suffix(3000))")

        // Every recipient of the fan-out is pushed, by the same gateway, nothing restarted by hand.
        let fanOutDone = try await DeliveryResilienceTests.waitUntil(seconds: 600, every: .milliseconds(500)) {
            Set(simulator.apns.deliveries.map(\.deviceToken) + simulator.fcm.deliveries.map(\.registrationToken)).count >= Self.recipients + 1
        }
        #expect(fanOutDone, "log: \(gateway.log.suffix(3000))")
        #expect(atDisruption < Self.recipients, "the fan-out finished before the \(title); the test proves nothing")
        #expect(gateway.isRunning)

        // Every code answered OK is stored with its delivery, and every delivery is recorded.
        let stored = try await pool.withConnection(idempotent: true) { connection in
            Set(try connection.query(sql: "SELECT id FROM notifications WHERE id LIKE 'code-%'").rows.compactMap { $0.text(0) })
        }
        let lost = acknowledged.keys.filter { !stored.contains($0) }
        #expect(lost.isEmpty, "codes answered OK and lost: \(lost.sorted().prefix(10))")
        let recorded = try await DeliveryResilienceTests.waitUntil(seconds: 120) {
            try await pool.withConnection(idempotent: true) { connection in
                try connection.query(sql: "SELECT count(*) FROM deliveries WHERE state = 'SENT' AND user_id LIKE 'ha-%'").scalar.flatMap(Int.init)
            } == Self.recipients
        }
        #expect(recorded, "deliveries of the fan-out not recorded SENT")
        let deliveriesLost = try await pool.withConnection(idempotent: true) { connection in
            try connection.query(sql: """
                SELECT count(*) FROM notifications n WHERE n.id LIKE 'code-%'
                AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_key = n.key)
                """).scalar.flatMap(Int.init) ?? -1
        }
        #expect(deliveriesLost == 0)

        // A push repeats only if it was in flight (claimed, not yet recorded) when the primary
        // went: at most a batch per worker.
        let fanOutPushes = simulator.apns.deliveries.count + simulator.fcm.deliveries.filter { $0.registrationToken != CodeStream.token }.count
        let duplicates = fanOutPushes - Self.recipients
        #expect(duplicates <= Self.batchSize * Self.workers, "\(duplicates) duplicates")

        // How long the bank waited: the first code answered OK after the last one refused, and
        // the first code pushed after that.
        let refusedAfter = await codes.refusedTimes.filter { $0 >= disrupted }
        let resumed = refusedAfter.max() ?? disrupted
        let firstOK = acknowledged.values.filter { $0 > resumed }.min()
        let firstPushed = simulator.fcm.deliveries.filter { $0.registrationToken == CodeStream.token && $0.receivedAt > (firstOK ?? resumed) }
            .map(\.receivedAt).min()
        let seconds = { (date: Date?) in date.map { String(format: "%.1f s", $0.timeIntervalSince(disrupted)) } ?? "never" }
        print("""
            Patroni \(title) at \(atDisruption) of \(Self.recipients) pushes: codes answered OK \(acknowledged.count), refused \(refusedAfter.count), \
            answered OK and lost \(lost.count); deliveries lost \(deliveriesLost); duplicates \(duplicates); \
            first code answered OK again \(seconds(firstOK)), first code pushed again \(seconds(firstPushed)) after the \(title)
            """)
        #expect(firstOK != nil && firstPushed != nil)
        gateway.signal(SIGTERM)
        #expect(await gateway.waitForExit() == 0)
    }
}

/// One-time codes to one phone, 10 a second (priority 10), until stopped: remembers when each
/// was answered OK, when one was refused, and which got no answer at all.
actor CodeStream {
    static let user = "payer"
    static let token = "fcm-payer"
    let url: String
    private(set) var acknowledged: [String: Date] = [:]
    private(set) var refusedTimes: [Date] = []
    private(set) var unanswered: [String] = []
    private var stopped = false
    private var next = 0

    init(url: String) {
        self.url = url
    }

    func stop() { stopped = true }

    /// Starts a code every 100 ms, each in its own task, so a slow answer never slows the stream.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            while !stopped {
                next += 1
                let id = "code-\(next)"
                group.addTask { await self.send(id) }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    private func send(_ id: String) async {
        let envelope = GatewayHarness.envelope(GatewayHarness.sendNotification(
            id: id, recipients: [Self.user], timeout: "3600", extra: "<priority>10</priority>"))
        do {
            let reply = try await DeliveryResilienceTests.post(url, envelope)
            if reply.contains("<status>OK</status>") { acknowledged[id] = Date() } else { refusedTimes.append(Date()) }
        } catch {
            unanswered.append("\(id): \(error)")
        }
    }
}
