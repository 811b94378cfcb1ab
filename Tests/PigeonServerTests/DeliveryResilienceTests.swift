import Foundation
@testable import PigeonConfiguration
import PigeonCore
import PigeonDelivery
@testable import PigeonServer
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import PostgresDriver
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The engine when things go wrong: processes killed mid fan-out, SIGTERM with sends in flight,
/// and a push service enforcing HTTP/2's rapid-reset limit against libcurl's stream resets.
@Suite("Delivery engine under failure", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"), .enabled(if: TestTier.runsSystem, "system tier (gateways killed with -9): PIGEON_TEST_TIER"))
struct DeliveryResilienceTests {
    @Test("kill -9 in the middle of a 5,000-recipient fan-out: a second process finishes it, duplicates bounded by the pushes in flight and one commit group, not by claimed batches")
    func killMidFanOut() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        // Provider latency keeps the fan-out going long enough to be killed in the middle.
        simulator.apns.setFaults(FaultRules([FaultRules.anyToken: .init(.delay(milliseconds: 40))]))
        simulator.fcm.setFaults(FaultRules([FaultRules.anyToken: .init(.delay(milliseconds: 40))]))
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let users = try await Self.subscribe(count: 5000, prefix: "kill", in: database.pool)
        // The engine holds up to 600 deliveries under lease (100 in flight and a batch); each of
        // the two services (half iPhones, half Android) has 100 pushes in flight at most.
        let concurrency = 100
        let configuration = Self.configuration(simulator: simulator, database: database.url, extra: """
            deliveryLeaseSeconds = 3
            deliveryBatchSize = 500
            deliveryConcurrency = \(concurrency)
            deliveryWorkers = 2
            """)

        let first = try await GatewayProcess.start(configuration: configuration)
        let reply = try await Self.post(first.baseURL + GatewayHarness.soapPath, GatewayHarness.envelope(GatewayHarness.sendNotification(id: "kill-9", recipients: users)))
        #expect(reply.contains("<status>OK</status>"))
        // Kill it mid-batch, while a lease still lists at least 100 deliveries not written back
        // (100 pushes in flight take 40 ms to be answered, far longer than the step to the kill).
        // Between two batches, both workers claiming, the gateway holds no lease at all, and a kill
        // there would leave nothing for the second process to take over (seen once in CI).
        #expect(try await Self.waitUntil(seconds: 60, every: .milliseconds(5)) {
            guard Self.pushCount(simulator) >= 1200 else { return false }
            return try await Self.heldDeliveries(database.pool) >= 100
        })
        first.signal(SIGKILL)
        #expect(await first.waitForExit() == SIGKILL)
        let atKill = Self.pushCount(simulator)
        #expect(atKill < 5000, "the fan-out finished before the kill; the test proves nothing")
        let heldAtKill = try await Self.heldDeliveries(database.pool)
        #expect(heldAtKill >= 1, "the killed gateway held no lease; the test proves nothing")

        let second = try await GatewayProcess.start(configuration: configuration)
        let finished = try await Self.waitUntil(seconds: 90) { try await Self.count(database.pool, "state = 'SENT'") == 5000 }
        #expect(finished, "log of the second gateway: \(second.log.suffix(2000))")
        let tokens = simulator.apns.deliveries.map(\.deviceToken) + simulator.fcm.deliveries.map(\.registrationToken)
        #expect(Set(tokens).count == 5000)
        // Only pushes in flight at the kill, and outcomes not yet written, go out twice: together
        // within the engine's allowance (its pushes in flight plus a batch), not every claimed row.
        let duplicates = tokens.count - 5000
        #expect(duplicates <= concurrency + 500, "\(duplicates) duplicates")
        #expect(try await Self.count(database.pool, "attempts >= 2") >= 1, "no lease expired and was claimed again; pushes at the kill \(atKill), deliveries held \(heldAtKill); log of the first gateway: \(first.log.suffix(3000))")
        second.signal(SIGTERM)
        #expect(await second.waitForExit() == 0)
        await database.drop()
    }

    @Test("SIGTERM with sends in flight: exit 0 within the grace period, the held deliveries handed straight back")
    func sigtermHandsBack() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        // Answers held 30 s: a stop that waited for them would take far longer than the bound
        // below, which a loaded machine's slow exit stays well inside (it was 8 s against 8 s).
        simulator.apns.setFaults(FaultRules([FaultRules.anyToken: .init(.delay(milliseconds: 30_000))]))
        simulator.fcm.setFaults(FaultRules([FaultRules.anyToken: .init(.delay(milliseconds: 30_000))]))
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let users = try await Self.subscribe(count: 100, prefix: "term", in: database.pool)
        // A lease far longer than the test: only the hand-back can make the rows claimable again.
        let gateway = try await GatewayProcess.start(configuration: Self.configuration(simulator: simulator, database: database.url, extra: """
            deliveryLeaseSeconds = 600
            shutdownGraceSeconds = 1
            deliveryWorkers = 1
            """))
        let reply = try await Self.post(gateway.baseURL + GatewayHarness.soapPath, GatewayHarness.envelope(GatewayHarness.sendNotification(id: "term", recipients: users)))
        #expect(reply.contains("<status>OK</status>"))
        #expect(try await Self.waitUntil(seconds: 120) { Self.pushCount(simulator) >= 100 })
        let stopping = ContinuousClock.now
        gateway.signal(SIGTERM)
        #expect(await gateway.waitForExit(timeout: .seconds(60)) == 0)
        #expect(ContinuousClock.now - stopping < .seconds(20), "waited for the provider instead of the grace period")
        #expect(gateway.log.contains("handing their deliveries back"))
        #expect(try await Self.count(database.pool, "state = 'QUEUED' AND next_attempt_at <= now()") == 100)
        #expect(try await Self.leases(database.pool) == 0, "the stopped gateway left leases behind")

        simulator.apns.setFaults(FaultRules())
        simulator.fcm.setFaults(FaultRules())
        let successor = try await GatewayProcess.start(configuration: Self.configuration(simulator: simulator, database: database.url, extra: ""))
        #expect(try await Self.waitUntil(seconds: 120) { try await Self.count(database.pool, "state = 'SENT'") == 100 })
        successor.signal(SIGTERM)
        #expect(await successor.waitForExit() == 0)
        await database.drop()
    }

    @Test("SIGTERM mid fan-out against a push service answering at a bounded rate: the pushes on the wire finish, the rest go back at once, exit 0 in seconds; after the restart every device pushed, at most 5 twice")
    func sigtermMidFanOut() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let recipients = 3000
        let users = try await Self.subscribe(count: recipients, prefix: "stop", in: database.pool)
        let configuration = Self.boundedRate(simulator, database: database.url)
        let gateway = try await GatewayProcess.start(configuration: configuration)
        let reply = try await Self.post(gateway.baseURL + GatewayHarness.soapPath,
                                        GatewayHarness.envelope(GatewayHarness.sendNotification(id: "stop", recipients: users)))
        #expect(reply.contains("<status>OK</status>"))
        #expect(try await Self.waitUntil(seconds: 120, every: .milliseconds(5)) { Self.pushCount(simulator) >= recipients / 4 })
        let stopped = ContinuousClock.now
        let atSignal = Self.pushCount(simulator)
        gateway.signal(SIGTERM)
        #expect(await gateway.waitForExit(timeout: .seconds(60)) == 0)
        let exitTook = ContinuousClock.now - stopped
        let atStop = Self.pushCount(simulator)
        // The simulator counts a push as it arrives: after the signal, only pushes already
        // sent (at most the 50 in flight) may still arrive; none may start.
        #expect(atStop - atSignal <= 50, "\(atStop - atSignal) pushes arrived after SIGTERM")
        #expect(atStop < recipients, "the fan-out finished before the stop; the test proves nothing")
        #expect(!gateway.log.contains("did not finish before the shutdown deadline"), "\(gateway.log.suffix(3000))")
        #expect(gateway.log.contains("deliveries not yet pushed handed back"), "\(gateway.log.suffix(3000))")
        // Nothing this process held is left leased to it.
        #expect(try await Self.leases(database.pool) == 0, "the stopped gateway left leases behind")

        let successor = try await GatewayProcess.start(configuration: configuration)
        #expect(try await Self.waitUntil(seconds: 180) { try await Self.count(database.pool, "state = 'SENT'") == recipients },
                "log of the successor: \(successor.log.suffix(2000))")
        successor.signal(SIGTERM)
        #expect(await successor.waitForExit() == 0)
        let (missing, duplicates) = Self.pushesPerDevice(simulator, expected: recipients)
        print("SIGTERM mid fan-out: \(atSignal) of \(recipients) pushed at SIGTERM, \(atStop) at the exit, exit \(exitTook) after SIGTERM, missing \(missing), pushed twice \(duplicates)")
        #expect(missing == 0)
        #expect(duplicates <= 5, "\(duplicates) devices pushed twice; pushes at the stop: \(atStop)")
        await database.drop()
    }

    @Test("a rolling restart of two gateways on one database mid fan-out: every device pushed, at most 5 twice")
    func rollingRestart() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let recipients = 3000
        let users = try await Self.subscribe(count: recipients, prefix: "roll", in: database.pool)
        let configuration = Self.boundedRate(simulator, database: database.url)
        var gateways = [try await GatewayProcess.start(configuration: configuration), try await GatewayProcess.start(configuration: configuration)]
        let reply = try await Self.post(gateways[0].baseURL + GatewayHarness.soapPath,
                                        GatewayHarness.envelope(GatewayHarness.sendNotification(id: "roll", recipients: users)))
        #expect(reply.contains("<status>OK</status>"))
        // One gateway at a time is stopped and replaced while the fan-out goes on.
        for (index, share) in [(0, 4), (1, 2)] {
            #expect(try await Self.waitUntil(seconds: 120, every: .milliseconds(5)) { Self.pushCount(simulator) >= recipients / share })
            #expect(Self.pushCount(simulator) < recipients, "the fan-out finished before the restart of gateway \(index)")
            let stopped = ContinuousClock.now
            let atSignal = Self.pushCount(simulator)
            gateways[index].signal(SIGTERM)
            #expect(await gateways[index].waitForExit(timeout: .seconds(60)) == 0)
            print("rolling restart: gateway \(index) exited \(ContinuousClock.now - stopped) after SIGTERM, \(atSignal) of \(recipients) pushed at SIGTERM, \(Self.pushCount(simulator)) at its exit")
            #expect(!gateways[index].log.contains("did not finish before the shutdown deadline"))
            gateways[index] = try await GatewayProcess.start(configuration: configuration)
        }
        #expect(try await Self.waitUntil(seconds: 180) { try await Self.count(database.pool, "state = 'SENT'") == recipients })
        for gateway in gateways {
            gateway.signal(SIGTERM)
            #expect(await gateway.waitForExit() == 0)
        }
        let (missing, duplicates) = Self.pushesPerDevice(simulator, expected: recipients)
        print("rolling restart: missing \(missing), pushed twice \(duplicates)")
        #expect(missing == 0)
        #expect(duplicates <= 5, "\(duplicates) devices pushed twice")
        await database.drop()
    }

    @Test("a provider enforcing the rapid-reset limit: GOAWAYs ridden through, every push sent once, reconnections in /metrics")
    func rapidResetLimit() async throws {
        let fixture = try await SimulatorFixture.start(enforceRapidResetLimit: true)
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let users = (0..<3000).map { "reset-\($0)" }
        _ = try await database.pool.withConnection { connection in
            try connection.query(sql: """
                INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
                SELECT 'bank', u, u, 'phone', 'IOS', md5(u) FROM unnest($1::text[]) AS u
                """, [PostgresArray.encode(users)])
        }
        // One client driving both connections: spread over two threads, each connection carries
        // half the resets and a loaded machine may stay under nghttp2's limit.
        let harness = try await GatewayHarness {
            $0.point(at: simulator, database: database.url)
            $0.delivery.pushThreads = 1
        }
        let reply = try await harness.soap(GatewayHarness.sendNotification(id: "reset", recipients: users))
        #expect(reply.status == 200)
        #expect(try await Self.waitUntil(seconds: 90) { try await Self.count(database.pool, "state = 'SENT'") == 3000 })
        let tokens = simulator.apns.deliveries.map(\.deviceToken)
        #expect(Set(tokens).count == 3000)
        // libcurl resets a stream after every body-less answer; nghttp2 ends such connections.
        #expect(simulator.connectionsAccepted >= 3)
        // The depth is sampled every 5 s; the connection counters are read at each scrape.
        var metrics = ""
        _ = try await Self.waitUntil(seconds: 15) {
            metrics = try await harness.request("GET", "/metrics").text
            return metrics.contains("pigeon_delivery_queue_depth 0")
        }
        #expect((Self.gauge(metrics, "pigeon_push_connections_opened{app=\"default\",service=\"apns\"}") ?? 0) >= 3, "\(metrics)")
        // A push whose answer was lost with its connection may have arrived: a restart or a
        // retry can repeat it (the collapse id keeps the device showing one), and so can libcurl,
        // which re-sends on a fresh connection what a dead reused one had in flight without
        // telling us. Each lost connection can repeat at most the streams it carried.
        let restarted = Self.gauge(metrics, "pigeon_push_transfers_restarted{app=\"default\",service=\"apns\"}")
        let retried = Self.gauge(metrics, "pigeon_push_retries_total{app=\"default\",cause=\"connection\",platform=\"IOS\"}") ?? 0
        let opened = Self.gauge(metrics, "pigeon_push_connections_opened{app=\"default\",service=\"apns\"}") ?? 1
        let streamsPerConnection = Double(GatewayConfiguration.Delivery().concurrency)
        #expect(restarted != nil)
        #expect(Double(tokens.count - 3000) <= (restarted ?? 0) + retried + (opened - 1) * streamsPerConnection, "\(tokens.count - 3000) duplicates")
        #expect(metrics.contains("pigeon_delivery_queue_depth 0"))
        await harness.gateway.shutdown()
        await database.drop()
    }

    // MARK: - Helpers

    /// `count` users with one device each, alternately iOS and Android; returns their ids.
    static func subscribe(count: Int, prefix: String, in pool: PostgresPool) async throws -> [String] {
        let users = (0..<count).map { "\(prefix)-\($0)" }
        _ = try await pool.withConnection { connection in
            try connection.query(sql: """
                INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
                SELECT 'bank', u, u, 'phone', CASE WHEN n % 2 = 0 THEN 'IOS' ELSE 'ANDROID' END,
                       CASE WHEN n % 2 = 0 THEN md5(u) ELSE 'fcm-' || u END
                FROM unnest($1::text[]) WITH ORDINALITY AS t(u, n)
                """, [PostgresArray.encode(users)])
        }
        return users
    }

    static func configuration(simulator: Simulator, database: String, extra: String) -> String {
        """
        dbUrl = \(database)
        dbPoolSize = 4
        migrationsPath = \(TestDatabase.migrationsDirectory.path)
        maxRequestBytes = 4194304
        logLevel = info
        \(simulator.configurationSnippet)
        \(extra)
        """
    }

    /// Push services answering at a bounded rate, as APNs and FCM do under load: every push
    /// answered after 300 ms, 25 in flight per service and gateway — ~160 pushes a second in
    /// all, not slow enough for the engine to call the services slow. A gateway then holds ~3 s
    /// of pushes (its window and a batch), more than the time its 3-second shutdown grace leaves
    /// the engine, so a stop that went on pushing what it held would run out of time, hand back
    /// pushes already made and have them repeated.
    static func boundedRate(_ simulator: Simulator, database: String) -> String {
        simulator.apns.setFaults(FaultRules([FaultRules.anyToken: .init(.delay(milliseconds: 300))]))
        simulator.fcm.setFaults(FaultRules([FaultRules.anyToken: .init(.delay(milliseconds: 300))]))
        return configuration(simulator: simulator, database: database, extra: """
            deliveryConcurrency = 25
            shutdownGraceSeconds = 3
            """)
    }

    /// Of `expected` devices (one per recipient), how many the simulator never received a push
    /// for, and how many it received more than one for.
    static func pushesPerDevice(_ simulator: Simulator, expected: Int) -> (missing: Int, duplicates: Int) {
        let tokens = simulator.apns.deliveries.map(\.deviceToken) + simulator.fcm.deliveries.map(\.registrationToken)
        let counts = Dictionary(tokens.map { ($0, 1) }, uniquingKeysWith: +)
        return (expected - counts.count, counts.values.filter { $0 > 1 }.count)
    }

    static func pushCount(_ simulator: Simulator) -> Int {
        simulator.apns.deliveries.count + simulator.fcm.deliveries.count
    }

    static func count(_ pool: PostgresPool, _ condition: String) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query(sql: "SELECT count(*) FROM deliveries WHERE \(condition)").scalar.flatMap(Int.init) ?? 0
        }
    }

    /// The deliveries the leases in `delivery_leases` list that were not written back yet.
    static func heldDeliveries(_ pool: PostgresPool) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query(sql: "SELECT COALESCE(sum(remaining), 0) FROM delivery_leases").scalar.flatMap(Int.init) ?? -1
        }
    }

    /// The leases left in `delivery_leases` (a stopped gateway ends its own).
    static func leases(_ pool: PostgresPool) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query(sql: "SELECT count(*) FROM delivery_leases").scalar.flatMap(Int.init) ?? -1
        }
    }

    static func gauge(_ metrics: String, _ series: String) -> Double? {
        metrics.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// Polls `condition`; true once it holds, false after `seconds`.
    static func waitUntil(seconds: Int, every interval: Duration = .milliseconds(50), _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: interval)
        }
        return false
    }

    static func post(_ url: String, _ envelope: String) async throws -> String {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        request.httpBody = Data(envelope.utf8)
        request.setValue("text/xml; charset=utf-8", forHTTPHeaderField: "Content-Type")
        request.timeoutInterval = 60
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, _) = try await session.data(for: request)
        return String(decoding: data, as: UTF8.self)
    }
}
