import Foundation
import PigeonBankService
@testable import PigeonConfiguration
import PigeonConsole
import PigeonCore
import PigeonDeviceAPI
import PigeonDomain
@testable import PigeonServer
import PigeonStore
import PigeonTestSupport
import Testing

/// What the console's pages read (CONTRACT §10), held to both implementations: the in-memory
/// console the router tests run on (over `InMemoryStores`, unit tier) and the gateway's
/// `ConsoleData` on PostgreSQL (integration tier, a fresh database each case). The world is
/// made through the seams the device API and the SOAP service write with.
@Suite("Console source contract: the in-memory console and PostgreSQL show the same", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConsoleSourceContractTests {
    typealias Kind = StoreKind

    struct World {
        var console: any ConsoleSource
        var devices: any DeviceRegistering
        var notifications: any NotificationRecording
        var finish: @Sendable () async -> Void
    }

    static func make(_ kind: Kind) async throws -> World {
        switch kind {
        case .memory:
            let stores = InMemoryStores()
            return World(console: InMemoryConsole(stores: stores, settings: [], clock: Date.init), devices: stores, notifications: stores,
                         finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            // The in-memory stores fold case, as the gateway's default (caseInsensitiveIds) does.
            let identifiers = UserIdentifiers(caseInsensitive: true)
            var configuration = GatewayConfiguration()
            configuration.database.migrationsPath = TestDatabase.migrationsDirectory.path
            let metrics = MetricsRegistry()
            let notifications = NotificationStore(pool: pool, identifiers: identifiers)
            let console = ConsoleData(
                store: ConsoleStore(pool: pool, identifiers: identifiers), notifications: notifications, outbox: Outbox(pool: pool),
                metrics: metrics, pool: pool, migrator: try Gateway.loadMigrator(configuration), activity: PushActivity(metrics: metrics),
                pushClients: [], listenerCertificates: LateList(), settings: [], testPusher: { _ in [] })
            return World(console: console, devices: DeviceRegistry(pool: pool, identifiers: identifiers), notifications: notifications,
                         finish: drop)
        }
    }

    static func identity(_ user: String, _ device: String) -> DeviceIdentity {
        DeviceIdentity(bankClientId: "bank", userId: user, deviceId: device, platform: .ios)
    }

    @discardableResult
    static func subscribe(_ world: World, _ user: String, _ device: String, token: String) async throws -> Int64 {
        try await world.devices.subscribe(identity(user, device), pushToken: token,
                                          token: StoredToken(digest: Data((user + device).utf8), expiresAt: Date().addingTimeInterval(3600)),
                                          override: false, encryptionKey: nil)
    }

    static func notification(_ id: String, _ users: [String]) -> PushNotification {
        PushNotification(id: id, recipients: users, timeoutSeconds: 600, pushContent: PushContent(text: "Your statement is ready", type: .message))
    }

    @Test("a notification's page: unknown is nil; known shows its content, every recipient counted and each one's state in the order sent, a page at a time",
          arguments: Kind.available)
    func notificationPage(kind: Kind) async throws {
        let world = try await Self.make(kind)
        try await Self.subscribe(world, "alice", "phone", token: String(repeating: "a1", count: 32))
        try await Self.subscribe(world, "bob", "phone", token: String(repeating: "b2", count: 32))
        _ = try await world.notifications.send(Self.notification("statement-1", ["alice", "zed", "bob"]))
        #expect(try await world.console.notification("no-such-id", page: 1) == nil)
        let view = try #require(try await world.console.notification("statement-1", page: 1))
        #expect(view.notification.id == "statement-1" && view.notification.pushContent.text == "Your statement is ready")
        #expect(view.total == 3)
        #expect(view.recipients.map(\.user) == ["alice", "zed", "bob"])
        #expect(view.recipients.map(\.state) == ["QUEUED", "INVALID_SUBSCRIPTION", "QUEUED"])
        let many = (1...60).map { "user-\($0)" }
        _ = try await world.notifications.send(Self.notification("blast-1", many))
        let second = try #require(try await world.console.notification("blast-1", page: 2))
        #expect(second.total == 60)
        #expect(second.recipients.map(\.user) == Array(many[50...]))
        await world.finish()
    }

    @Test("a user's page: no name is nil; a user shows their devices, what was sent to them and the devices waiting for a code; an unknown user shows nothing",
          arguments: Kind.available)
    func userPage(kind: Kind) async throws {
        let world = try await Self.make(kind)
        try await Self.subscribe(world, "alice", "phone", token: String(repeating: "a1", count: 32))
        try await Self.subscribe(world, "alice", "tablet", token: String(repeating: "a2", count: 32))
        try await world.devices.savePending(Self.identity("alice", "watch"), pushToken: String(repeating: "a3", count: 32),
                                            registrationDigest: Data("watch-code".utf8), keep: 3, encryptionKey: nil)
        _ = try await world.notifications.send(Self.notification("statement-1", ["alice"]))
        #expect(try await world.console.user("") == nil)
        let alice = try #require(try await world.console.user("alice"))
        #expect(Set(alice.devices.map(\.deviceId)) == ["phone", "tablet"])
        #expect(alice.devices.allSatisfy { $0.platform == "IOS" && $0.bankClientId == "bank" }, "\(alice.devices.map(\.platform))")
        #expect(alice.recent.map(\.notificationId) == ["statement-1"] && alice.recent.map(\.state) == ["QUEUED"])
        #expect(alice.pending.map(\.deviceId) == ["watch"])
        let nobody = try #require(try await world.console.user("zed"))
        #expect(nobody.devices.isEmpty && nobody.recent.isEmpty && nobody.pending.isEmpty && nobody.removed.isEmpty)
        await world.finish()
    }

    @Test("a revoke removes the device and names its user; the user's page lists it among the removed, with the reason and its token masked; a second revoke finds nothing",
          arguments: Kind.available)
    func revoke(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let token = String(repeating: "c3", count: 32)
        let id = try await Self.subscribe(world, "carol", "phone", token: token)
        try await Self.subscribe(world, "carol", "tablet", token: String(repeating: "c4", count: 32))
        let revoked = try #require(try await world.console.revoke(deviceId: id, reason: "lost phone"))
        #expect(revoked.user == "carol" && revoked.device.deviceId == "phone")
        let carol = try #require(try await world.console.user("carol"))
        #expect(carol.devices.map(\.deviceId) == ["tablet"])
        #expect(carol.removed.map(\.deviceId) == ["phone"] && carol.removed.map(\.reason) == ["lost phone"])
        #expect(carol.removed.allSatisfy { !$0.maskedToken.contains(token) && $0.maskedToken == Redaction.token(token) }, "\(carol.removed.map(\.maskedToken))")
        #expect(try await world.console.revoke(deviceId: id, reason: "again") == nil)
        await world.finish()
    }
}
