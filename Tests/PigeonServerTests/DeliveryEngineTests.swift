import Foundation
@testable import PigeonConfiguration
import PigeonCore
import PigeonDomain
@testable import PigeonServer
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import PostgresDriver
import Testing

/// The whole path: SOAP sendNotification → PostgreSQL → delivery engine → APNs/FCM over HTTP/2
/// and TLS → `pigeon simulate` → states recorded.
@Suite("Delivery engine end to end", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct DeliveryEngineTests {
    @Test("pushes reach the simulator, states become SENT, dead tokens are removed")
    func endToEnd() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, database, harness, subscriptions, store) = (setting.simulator, setting.database, setting.harness, setting.subscriptions, setting.store)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "ios-user", deviceId: "iphone", platform: .ios, pushToken: "a1b2c3d4")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "android-user", deviceId: "pixel", platform: .android, pushToken: "fcm:token-1")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "both", deviceId: "iphone", platform: .ios, pushToken: "deadbeef")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "both", deviceId: "pixel", platform: .android, pushToken: "fcm:token-2")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "gone", deviceId: "iphone", platform: .ios, pushToken: "0dead0")
        simulator.apns.setFaults(FaultRules(["deadbeef": .init(.unregistered), "0dead0": .init(.badDeviceToken)]))

        let reply = try await harness.soap(GatewayHarness.sendNotification(id: "engine-1", recipients: ["ios-user", "android-user", "both", "gone", "nobody"]))
        #expect(reply.text.contains("<key>ios-user</key><value>QUEUED</value>"))

        var states: [RecipientState] = []
        for _ in 0..<150 {
            states = try await store.deliveryStatus(id: "engine-1") ?? []
            if !states.contains(where: { $0.state == .queued }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(states == [
            RecipientState(user: "ios-user", state: .sent),
            RecipientState(user: "android-user", state: .sent),
            RecipientState(user: "both", state: .sent),
            RecipientState(user: "gone", state: .invalidSubscription),
            RecipientState(user: "nobody", state: .invalidSubscription),
        ])
        #expect(Set(simulator.apns.deliveries.map(\.deviceToken)) == ["a1b2c3d4"])
        #expect(Set(simulator.fcm.deliveries.map(\.registrationToken)) == ["fcm:token-1", "fcm:token-2"])
        let payload = try JSONSerialization.jsonObject(with: simulator.apns.deliveries[0].payload) as? [String: Any]
        #expect(payload?["notificationId"] as? String == "engine-1")
        // Dead tokens are gone; the live Android device of "both" stays.
        #expect(try await subscriptions.devices(user: "both").map(\.pushToken) == ["fcm:token-2"])
        #expect(try await subscriptions.devices(user: "gone").isEmpty)
        let metrics = try await harness.request("GET", "/metrics")
        #expect(metrics.text.contains("pigeon_push_outcomes_total{app=\"default\",outcome=\"accepted\",platform=\"IOS\"} 1"))
        await harness.gateway.shutdown()
        await database.drop()
    }
}

extension DeliveryEngineTests {
    @Test("a key restricted to production used for a sandbox device (BadEnvironmentKeyIdInToken): that push fails as a configuration error, the device is kept, no new provider token is signed, the metric counts it and the log says it once a minute; the production device is pushed")
    func keyRestricted() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, database, harness, subscriptions) = (setting.simulator, setting.database, setting.harness, setting.subscriptions)
        // The key as Apple's developer account makes it since 2025: production only. A development
        // build's token (sandbox) goes to the sandbox host, where APNs refuses the key.
        simulator.apns.restrictKey(SimulatorCredentials.keyId, to: .init(environment: .production))
        try await subscriptions.subscribe(bankClientId: "bank", userId: "restricted", deviceId: "iphone", platform: .ios, pushToken: "abcdef01",
                                          environment: .sandbox)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "store-build", deviceId: "iphone", platform: .ios, pushToken: "abcdef02")
        for id in ["key-1", "key-2"] {
            _ = try await harness.soap(GatewayHarness.sendNotification(id: id, recipients: ["restricted", "store-build"]))
            #expect(try await setting.settledStates(id: id) == [RecipientState(user: "restricted", state: .sendingFailed),
                                                                 RecipientState(user: "store-build", state: .sent)])
        }
        #expect(try await subscriptions.devices(user: "restricted").map(\.pushToken) == ["abcdef01"], "the device is kept")
        #expect(simulator.apns.deliveries.map(\.deviceToken) == ["abcdef02", "abcdef02"])
        #expect(simulator.apns.deliveries.allSatisfy { $0.environment == .production })
        #expect(simulator.apns.providerTokenRefreshes == 0, "no token refresh loop")
        let metrics = try await harness.request("GET", "/metrics").text
        #expect(metrics.contains(#"pigeon_apns_key_restrictions_total{app="default",reason="BadEnvironmentKeyIdInToken"} 2"#), "\(metrics.split(separator: "\n").filter { $0.contains("apns") })")
        #expect(!metrics.contains(#"pigeon_apns_provider_tokens_signed_total{reason="rejected"}"#), "no new token for a key refused as such")
        let lines = harness.logs.records.filter { $0.message.hasPrefix("APNs refused this app's key") }
        #expect(lines.count == 1 && lines.first?.metadata["keyId"] == SimulatorCredentials.keyId && lines.first?.metadata["app"] == "default", "\(lines)")
        await harness.gateway.shutdown()
        await database.drop()
    }

    @Test("per device: the iPhone answers 503 once, the Android phone accepts → the user is SENT at once, the iPhone pushed again, the Android phone not")
    func perDeviceRetry() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, database, harness, subscriptions, store) = (setting.simulator, setting.database, setting.harness, setting.subscriptions, setting.store)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "two", deviceId: "iphone", platform: .ios, pushToken: "b0b0")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "two", deviceId: "pixel", platform: .android, pushToken: "fcm:two")
        simulator.apns.setFaults(FaultRules(["b0b0": .init(.serviceUnavailable, times: 1)]))

        // Ten minutes to live: this is about the retry, and a loaded machine must not expire the
        // notification before the check (the 60 s default did once, in a fresh-clone run here).
        _ = try await harness.soap(GatewayHarness.sendNotification(id: "per-device", recipients: ["two"], timeout: "600"))
        var inQueue = true
        _ = try await EdgeTests.waitUntil(seconds: 120) {
            inQueue = try await database.pool.withConnection {
                try $0.query(sql: "SELECT count(*) FROM deliveries WHERE next_attempt_at IS NOT NULL").scalar != "0"
            }
            return !inQueue && !simulator.apns.deliveries.isEmpty
        }
        #expect(!inQueue)
        let states = try await store.deliveryStatus(id: "per-device")
        #expect(states == [RecipientState(user: "two", state: .sent)], "\(String(describing: states))")
        let metrics = try await harness.request("GET", "/metrics")
        // What a push beyond the retry came from, for a failure to say: each push's id and
        // connection, the gateway's account of its pushes, its restarts and hand-backs.
        let story = """
            iPhone pushes: \(simulator.apns.deliveries.map { "\($0.apnsId) on connection \($0.connectionId)" })
            log: \(harness.logLines(atLeast: .debug).filter { $0.contains("push") || $0.contains("cannot") || $0.contains("lease") })
            metrics: \(metrics.text.split(separator: "\n").filter { $0.hasPrefix("pigeon_push_transfers_restarted") || $0.hasPrefix("pigeon_deliveries_handed_back") || $0.hasPrefix("pigeon_push_connections") || $0.hasPrefix("pigeon_outcomes_not_written") })
            """
        #expect(simulator.apns.deliveries.map(\.deviceToken) == ["b0b0"], "\(story)")
        #expect(simulator.fcm.deliveries.map(\.registrationToken) == ["fcm:two"], "\(story)")
        #expect(metrics.text.contains("pigeon_push_retries_total{app=\"default\",cause=\"unavailable\",platform=\"IOS\"} 1"))
        #expect(metrics.text.contains("pigeon_deliveries_total{state=\"SENT\"} 1"))
        await harness.gateway.shutdown()
        await database.drop()
    }
}

/// A gateway on a database of its own, pushing to `pigeon simulate`, with the stores a test reads.
struct EndToEnd {
    let fixture: SimulatorFixture
    let database: (pool: PostgresPool, url: String, drop: @Sendable () async -> Void)
    let harness: GatewayHarness
    let subscriptions: SubscriptionStore
    let store: NotificationStore
    var simulator: Simulator { fixture.simulator }

    /// The states of notification `id` once none is QUEUED (polled for up to two minutes).
    func settledStates(id: String) async throws -> [RecipientState] {
        // Up to two minutes: a loaded machine's engine takes its time, and a settled state
        // returns at once.
        var states: [RecipientState] = []
        _ = try await EdgeTests.waitUntil(seconds: 120) {
            states = try await store.deliveryStatus(id: id) ?? []
            return !states.isEmpty && !states.contains { $0.state == .queued }
        }
        return states
    }

    static func start(_ adjust: @escaping (inout GatewayConfiguration) -> Void = { _ in }) async throws -> EndToEnd {
        let fixture = try await SimulatorFixture.start()
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let simulator = fixture.simulator
        let harness = try await GatewayHarness {
            $0.point(at: simulator, database: database.url)
            adjust(&$0)
        }
        let identifiers = UserIdentifiers(caseInsensitive: false)
        return EndToEnd(fixture: fixture, database: database, harness: harness,
                        subscriptions: SubscriptionStore(pool: database.pool, identifiers: identifiers),
                        store: NotificationStore(pool: database.pool, identifiers: identifiers))
    }
}

@Suite("Delivery engine with APNs certificate authentication", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct CertificateAuthenticationTests {
    @Test("apnsCertificatePath/apnsPassword: pushes go out on a client-certificate connection, without provider tokens")
    func certificateAuthentication() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let harness = try await GatewayHarness {
            $0.point(at: simulator, database: database.url)
            $0.apns.keyPath = nil
            $0.apns.keyId = nil
            $0.apns.teamId = nil
            $0.apns.certificatePath = simulator.credentials.clientP12
            $0.apns.password = SimulatorCredentials.p12Password
        }
        let subscriptions = SubscriptionStore(pool: database.pool, identifiers: UserIdentifiers(caseInsensitive: false))
        try await subscriptions.subscribe(bankClientId: "bank", userId: "cert-user", deviceId: "iphone", platform: .ios, pushToken: "c0ffee")
        _ = try await harness.soap(GatewayHarness.sendNotification(id: "cert-1", recipients: ["cert-user"]))
        let store = NotificationStore(pool: database.pool, identifiers: UserIdentifiers(caseInsensitive: false))
        for _ in 0..<150 {
            if try await store.deliveryStatus(id: "cert-1")?.first?.state == .sent { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await store.deliveryStatus(id: "cert-1")?.first?.state == .sent)
        // The simulator accepts a push only with a valid provider token or a client certificate
        // its CA issued, and this gateway has no signing key: the certificate carried it.
        #expect(simulator.apns.deliveries.map(\.deviceToken) == ["c0ffee"])
        await harness.gateway.shutdown()
        await database.drop()
    }
}

@Suite("Delivery engine, two gateways on one database", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct TwoGatewaysTests {
    @Test("2,000 recipients fanned out by two gateways: every one pushed exactly once")
    func noDoubleSends() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let first = try await GatewayHarness { $0.point(at: simulator, database: database.url) }
        let second = try await GatewayHarness { $0.point(at: simulator, database: database.url) }
        let identifiers = UserIdentifiers(caseInsensitive: false)
        let users = (0..<2000).map { "fan-\($0)" }
        _ = try await database.pool.withConnection { connection in
            try connection.query(sql: """
                INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token)
                SELECT 'bank', u, u, 'phone', 'IOS', md5(u) FROM unnest($1::text[]) AS u
                """, [PostgresArray.encode(users)])
        }
        let body = GatewayHarness.sendNotification(id: "fan-out", recipients: users)
        let reply = try await first.soapRaw(Data(GatewayHarness.envelope(body).utf8))
        #expect(reply.status == 200)
        let store = NotificationStore(pool: database.pool, identifiers: identifiers)
        for _ in 0..<300 {
            let states = try await store.deliveryStatus(id: "fan-out") ?? []
            if !states.isEmpty && states.allSatisfy({ $0.state == .sent }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await store.deliveryStatus(id: "fan-out")?.allSatisfy { $0.state == .sent } == true)
        let tokens = simulator.apns.deliveries.map(\.deviceToken)
        #expect(tokens.count == 2000)
        #expect(Set(tokens).count == 2000)
        // Every delivery was claimed once: no retries, so attempts stay at 1.
        let attempts = try await database.pool.withConnection { connection in
            try connection.query(sql: "SELECT max(attempts) FROM deliveries WHERE notification_key = (SELECT key FROM notifications WHERE id = 'fan-out')").scalar
        }
        #expect(attempts == "1")
        await first.gateway.shutdown()
        await second.gateway.shutdown()
        await database.drop()
    }
}

extension GatewayConfiguration {
    /// Points APNs and FCM at `simulator` and the database at `database`.
    mutating func point(at simulator: Simulator, database: String) {
        let credentials = simulator.credentials
        self.database.url = database
        apns.endpoint = simulator.baseURL
        apns.sandboxEndpoint = simulator.sandboxBaseURL
        apns.channelEndpoint = simulator.baseURL
        apns.keyPath = credentials.apnsKey
        apns.keyId = SimulatorCredentials.keyId
        apns.teamId = SimulatorCredentials.teamId
        apns.topic = SimulatorCredentials.topic
        fcm.serviceAccountPath = credentials.serviceAccount
        fcm.endpoint = simulator.baseURL
        fcm.tokenEndpoint = simulator.baseURL + "/token"
        defaultApp.rustore.projectId = SimulatorCredentials.rustoreProjectId
        defaultApp.rustore.serviceToken = SimulatorCredentials.rustoreServiceToken
        defaultApp.rustore.endpoint = simulator.baseURL + "/rustore"
        defaultApp.huawei.appId = SimulatorCredentials.hmsAppId
        defaultApp.huawei.clientSecret = SimulatorCredentials.hmsClientSecret
        defaultApp.huawei.endpoint = simulator.baseURL + "/hms"
        defaultApp.huawei.tokenEndpoint = simulator.baseURL + "/hms/oauth2/v3/token"
        defaultApp.webPush.vapidPrivateKeyPath = credentials.vapidKey
        defaultApp.webPush.vapidSubject = SimulatorCredentials.vapidSubject
        defaultApp.webPush.allowedHosts = WebPushHosts(patterns: ["127.0.0.1:\(simulator.port)"])
        tlsCaFile = credentials.caFile
    }
}
