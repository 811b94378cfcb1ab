import Foundation
import PigeonBankService
import PigeonDeviceAPI
import PigeonDomain
@testable import PigeonServer
import PigeonStore
import PigeonTestSupport
import Testing

/// The request side's store rules, held to both implementations: the in-memory stores the router
/// tests run on (`InMemoryStores`, unit tier) and the PostgreSQL stores the gateway composes
/// (integration tier, a fresh database each case) — registration tokens and pending codes,
/// duplicate and case-folded sends, the bank's view of subscriptions, idempotent acknowledgements
/// that never go back, rate-limit windows (issue 49: nothing held the fakes to PostgreSQL).
@Suite("Request-side stores contract: the in-memory stores and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct RequestStoresContractTests {
    typealias Kind = StoreKind

    /// One world of stores, as the router sees it.
    struct World {
        var devices: any DeviceRegistering
        var notifications: any NotificationRecording
        var subscriptions: any SubscriptionKeeping
        var acknowledgements: any AcknowledgementRecording
        var limits: any RateLimitCounting
        var finish: @Sendable () async -> Void
    }

    static func make(_ kind: Kind) async throws -> World {
        switch kind {
        case .memory:
            let stores = InMemoryStores()
            return World(devices: stores, notifications: stores, subscriptions: stores, acknowledgements: stores, limits: stores, finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            // The gateway's default rule: user ids compare case-folded (caseInsensitiveIds).
            let identifiers = UserIdentifiers(caseInsensitive: true)
            return World(devices: DeviceRegistry(pool: pool, identifiers: identifiers),
                         notifications: NotificationStore(pool: pool, identifiers: identifiers),
                         subscriptions: SubscriptionStore(pool: pool, identifiers: identifiers),
                         acknowledgements: AcknowledgementStore(pool: pool, identifiers: identifiers),
                         limits: RateLimitStore(pool: pool), finish: drop)
        }
    }

    static func identity(_ user: String, _ device: String) -> DeviceIdentity {
        DeviceIdentity(bankClientId: "bank", userId: user, deviceId: device, platform: .ios)
    }

    static func token(_ byte: UInt8, expiresIn seconds: TimeInterval = 3600) -> StoredToken {
        StoredToken(digest: Data(repeating: byte, count: 32), expiresAt: Date().addingTimeInterval(seconds))
    }

    static func notification(_ id: String, _ users: [String]) -> PushNotification {
        PushNotification(id: id, recipients: users, timeoutSeconds: 600, pushContent: PushContent(text: "t", type: .universal))
    }

    @Test("a bearer token authenticates its device until it expires or is replaced; a device registered again replaces itself; override replaces the user's others",
          arguments: Kind.available)
    func registrations(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let phone = try await world.devices.subscribe(Self.identity("Anna", "phone"), pushToken: "aa01", token: Self.token(1), override: false, encryptionKey: nil)
        _ = try await world.devices.subscribe(Self.identity("Anna", "tablet"), pushToken: "aa02", token: Self.token(2, expiresIn: -1), override: false, encryptionKey: nil)
        #expect(try await world.devices.authenticate(digest: Self.token(1).digest)?.id == phone)
        #expect(try await world.devices.authenticate(digest: Self.token(2).digest) == nil, "an expired token")
        #expect(try await world.devices.authenticate(digest: Self.token(9).digest) == nil, "an unknown one")
        try await world.devices.refresh(device: phone, pushToken: "aa03", environment: .production, token: Self.token(3), encryptionKey: .keep)
        #expect(try await world.devices.authenticate(digest: Self.token(1).digest) == nil, "replaced")
        #expect(try await world.devices.authenticate(digest: Self.token(3).digest)?.identity.deviceId == "phone")
        let again = try await world.devices.subscribe(Self.identity("anna", "phone"), pushToken: "aa04", token: Self.token(4), override: false, encryptionKey: nil)
        #expect(try await world.devices.authenticate(digest: Self.token(3).digest) == nil, "the same device registered again is one device")
        #expect(try await world.devices.authenticate(digest: Self.token(4).digest)?.id == again)
        _ = try await world.devices.subscribe(Self.identity("ANNA", "new-phone"), pushToken: "aa05", token: Self.token(5), override: true, encryptionKey: nil)
        #expect(try await world.devices.authenticate(digest: Self.token(4).digest) == nil, "override: the user's other devices are gone")
        #expect(try await world.subscriptions.exist(users: ["anna", "Bob"]) == [true, false])
        await world.finish()
    }

    @Test("a registration waiting for its code: found by its digest for its device only; the newest ones kept; dropped on request",
          arguments: Kind.available)
    func pendingRegistrations(kind: Kind) async throws {
        let world = try await Self.make(kind)
        for byte in UInt8(1)...UInt8(3) {
            try await world.devices.savePending(Self.identity("Boris", "phone"), pushToken: "bb0\(byte)", registrationDigest: Data(repeating: byte, count: 32),
                                                keep: 2, encryptionKey: nil)
        }
        #expect(try await world.devices.pending(registrationDigest: Data(repeating: 1, count: 32), bankClientId: "bank", userId: "Boris", deviceId: "phone") == nil,
                "only the newest two are kept")
        #expect(try await world.devices.pending(registrationDigest: Data(repeating: 3, count: 32), bankClientId: "bank", userId: "boris", deviceId: "phone")?.pushToken == "bb03")
        #expect(try await world.devices.pending(registrationDigest: Data(repeating: 3, count: 32), bankClientId: "bank", userId: "Boris", deviceId: "tablet") == nil,
                "another device's code does not open it")
        try await world.devices.dropPending(bankClientId: "bank", userId: "Boris", deviceId: "phone")
        #expect(try await world.devices.pending(registrationDigest: Data(repeating: 2, count: 32), bankClientId: "bank", userId: "Boris", deviceId: "phone") == nil)
        await world.finish()
    }

    @Test("a send: each recipient once (case-folded), QUEUED with a device, INVALID_SUBSCRIPTION without; the same id again is a duplicate with the stored states; the bank deletes a user's devices",
          arguments: Kind.available)
    func sends(kind: Kind) async throws {
        let world = try await Self.make(kind)
        _ = try await world.devices.subscribe(Self.identity("Clara", "phone"), pushToken: "cc01", token: Self.token(1), override: false, encryptionKey: nil)
        let outcome = try await world.notifications.send(Self.notification("send-1", ["Clara", "CLARA", "dmitri"]))
        guard case .stored(let states, _) = outcome else { Issue.record("not stored: \(outcome)"); return }
        #expect(states == [RecipientState(user: "Clara", state: .queued), RecipientState(user: "dmitri", state: .invalidSubscription)])
        guard case .duplicate(let again) = try await world.notifications.send(Self.notification("send-1", ["Clara"])) else {
            Issue.record("a repeated id was stored again"); return
        }
        #expect(again == states)
        #expect(try await world.notifications.deliveryStatus(id: "send-1") == states)
        #expect(try await world.notifications.deliveryStatus(id: "never-sent") == nil)
        #expect(try await world.notifications.notification(id: "send-1", recipients: true)?.recipients == ["Clara", "dmitri"],
                "stored once per user, as first written (the in-memory store kept the repeat until this suite)")
        #expect(try await world.subscriptions.deleteAll(user: "clara") == 1)
        #expect(try await world.subscriptions.exist(users: ["Clara"]) == [false])
        await world.finish()
    }

    @Test("acknowledgements move a delivery forward only (DELIVERED, then READ; never back), answer for the addressed user only, and say when the notification is unknown",
          arguments: Kind.available)
    func acknowledgements(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let phone = try await world.devices.subscribe(Self.identity("Elena", "phone"), pushToken: "ee01", token: Self.token(1), override: false, encryptionKey: nil)
        _ = try await world.notifications.send(Self.notification("ack-1", ["Elena"]))
        let acks = world.acknowledgements
        #expect(try await acks.acknowledge(notificationId: "ack-1", user: "elena", device: phone, target: .delivered) == .recorded(.delivered))
        #expect(try await acks.acknowledge(notificationId: "ack-1", user: "Elena", device: phone, target: .delivered) == .recorded(.delivered), "idempotent")
        #expect(try await acks.acknowledge(notificationId: "ack-1", user: "Elena", device: phone, target: .read) == .recorded(.read))
        #expect(try await acks.acknowledge(notificationId: "ack-1", user: "Elena", device: phone, target: .delivered) == .recorded(.read), "never back")
        #expect(try await world.notifications.deliveryStatus(id: "ack-1") == [RecipientState(user: "Elena", state: .read)])
        #expect(try await acks.acknowledge(notificationId: "ack-1", user: "someone-else", device: phone, target: .delivered) == .notAddressed)
        #expect(try await acks.acknowledge(notificationId: "no-such", user: "Elena", device: phone, target: .delivered) == .notFound)
        guard case .found(let found) = try await acks.notification(id: "ack-1", user: "ELENA") else { Issue.record("not found for its user"); return }
        #expect(found.id == "ack-1")
        #expect(try await acks.notification(id: "ack-1", user: "someone-else") == .notAddressed)
        #expect(try await acks.notification(id: "no-such", user: "Elena") == .notFound)
        await world.finish()
    }

    @Test("a rate limit admits `limit` takes in its window, then refuses with a wait within the window; buckets are separate",
          arguments: Kind.available)
    func rateLimits(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let first = try await world.limits.take(bucket: "register:192.0.2.1", limit: 2, window: .seconds(60))
        let second = try await world.limits.take(bucket: "register:192.0.2.1", limit: 2, window: .seconds(60))
        let third = try await world.limits.take(bucket: "register:192.0.2.1", limit: 2, window: .seconds(60))
        #expect((first.allowed, first.count, second.allowed, second.count) == (true, 1, true, 2))
        #expect(!third.allowed && third.count == 3 && (1...60).contains(third.retryAfterSeconds), "\(third)")
        #expect(try await world.limits.take(bucket: "register:192.0.2.2", limit: 2, window: .seconds(60)).allowed)
        await world.finish()
    }
}
