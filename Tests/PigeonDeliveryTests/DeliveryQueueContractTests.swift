import Foundation
import PigeonCore
import PigeonDomain
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonDelivery

/// The delivery queue's rules, held to both implementations: the in-memory queue the engine's
/// tests run on (`FakeQueue`, unit tier) and PostgreSQL's `DeliveryQueue` (integration tier, a
/// fresh database each case). A rule the fake keeps and the SQL does not (or the reverse) fails
/// here, not in production (issue 49: nothing held the fakes to PostgreSQL).
@Suite("Delivery queue contract: the in-memory queue and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct DeliveryQueueContractTests {
    typealias Kind = StoreKind

    /// A stored notification: its priority, its recipients, and whether its time has run out.
    struct Group {
        var priority: Int
        var users: Int
        var expired = false
    }

    /// The queue holding `groups`, stored in that order, and how to close it.
    struct Setting {
        var queue: any DeliveryQueueing
        /// The queue's time: the fake's clock, or this machine's (PostgreSQL's `now()`).
        var now: @Sendable () -> Date
        var finish: @Sendable () async -> Void
    }

    static func make(_ kind: Kind, _ groups: [Group]) async throws -> Setting {
        switch kind {
        case .memory:
            let clock = ManualClock()
            var deliveries: [ClaimedDelivery] = []
            for (index, group) in groups.enumerated() {
                for user in 0..<group.users {
                    deliveries.append(ClaimedDelivery(
                        notificationKey: Int64(index + 1), userId: "g\(index)-u\(user)", userFolded: "g\(index)-u\(user)", position: user,
                        attempt: 0, expiresAt: clock.now().addingTimeInterval(group.expired ? -1 : 600), priority: group.priority))
                }
            }
            return Setting(queue: FakeQueue(clock: clock, deliveries: deliveries), now: { clock.now() }, finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            let identifiers = UserIdentifiers(caseInsensitive: false)
            let subscriptions = SubscriptionStore(pool: pool, identifiers: identifiers)
            let notifications = NotificationStore(pool: pool, identifiers: identifiers)
            for (index, group) in groups.enumerated() {
                let users = (0..<group.users).map { "g\(index)-u\($0)" }
                for user in users {
                    try await subscriptions.subscribe(bankClientId: "bank", userId: user, deviceId: "d", platform: .ios, pushToken: "ab")
                }
                _ = try await notifications.send(PushNotification(
                    id: "group-\(index)", recipients: users, timeoutSeconds: 600,
                    pushContent: PushContent(text: "t", type: .universal), priority: group.priority))
                if group.expired {
                    _ = try await pool.withConnection { connection in
                        try connection.query(sql: "UPDATE deliveries SET expires_at = now() - interval '1 second' WHERE notification_key = (SELECT key FROM notifications WHERE id = $1)",
                                             ["group-\(index)"])
                    }
                }
            }
            return Setting(queue: PostgresQueue(queue: DeliveryQueue(pool: pool)), now: { Date() }, finish: drop)
        }
    }

    /// The claimed deliveries' users, in the order claimed.
    static func users(_ claims: [ClaimedDelivery]) -> [String] { claims.map(\.userId) }

    @Test("a claim takes the highest priority first, then what was stored first; a band narrows it; a delivery whose time ran out is never claimed",
          arguments: Kind.available)
    func claimOrder(kind: Kind) async throws {
        let setting = try await Self.make(kind, [Group(priority: 0, users: 2), Group(priority: 10, users: 1), Group(priority: 0, users: 1),
                                                 Group(priority: 10, users: 1, expired: true)])
        let urgent = try await setting.queue.claim(owner: "urgent", limit: 10, lease: .seconds(600), band: .atLeast(10))
        #expect(Self.users(urgent) == ["g1-u0"])
        #expect(urgent.first?.priority == 10)
        let rest = try await setting.queue.claim(owner: "bulk", limit: 2, lease: .seconds(600), band: .below(10))
        #expect(Set(Self.users(rest)) == ["g0-u0", "g0-u1"], "the earlier stored group first")
        #expect(Self.users(try await setting.queue.claim(owner: "bulk", limit: 10, lease: .seconds(600), band: .all)) == ["g2-u0"])
        #expect(try await setting.queue.claim(owner: "bulk", limit: 10, lease: .seconds(600), band: .all).isEmpty, "the timed-out one stays")
        await setting.finish()
    }

    @Test("a lease keeps a delivery from every other claim until it ends; one of 0 s ends at once, and the next claim is a second attempt",
          arguments: Kind.available)
    func leases(kind: Kind) async throws {
        let setting = try await Self.make(kind, [Group(priority: 0, users: 1), Group(priority: 0, users: 1)])
        let first = try await setting.queue.claim(owner: "a", limit: 1, lease: .seconds(600), band: .all)
        #expect(first.map(\.attempt) == [1])
        let ended = try await setting.queue.claim(owner: "b", limit: 1, lease: .zero, band: .all)
        #expect(Self.users(ended) == ["g1-u0"], "the other one: the first is leased")
        let again = try await setting.queue.claim(owner: "c", limit: 10, lease: .seconds(600), band: .all)
        #expect(Self.users(again) == ["g1-u0"] && again.map(\.attempt) == [2], "its lease of 0 s ended; the first is still held")
        await setting.finish()
    }

    @Test("only the lease's holder writes an outcome: SENT leaves the queue; QUEUED with a later attempt waits for it; SENT with devices to retry comes back as already sent with them",
          arguments: Kind.available)
    func outcomes(kind: Kind) async throws {
        let setting = try await Self.make(kind, [Group(priority: 0, users: 4)])
        let claimed = try await setting.queue.claim(owner: "a", limit: 10, lease: .seconds(600), band: .all)
        #expect(claimed.count == 4)
        let byUser = Dictionary(uniqueKeysWithValues: claimed.map { ($0.userId, $0) })
        let sent = try #require(byUser["g0-u0"]), later = try #require(byUser["g0-u1"]), soon = try #require(byUser["g0-u2"])
        let partly = try #require(byUser["g0-u3"])
        #expect(try await setting.queue.record([DeliveryResult(delivery: sent, state: .sent)], owner: "not-the-holder") == 0)
        let now = setting.now()
        #expect(try await setting.queue.record([
            DeliveryResult(delivery: sent, state: .sent),
            DeliveryResult(delivery: later, state: .queued, nextAttemptAt: now.addingTimeInterval(3600), pendingDevices: [7], error: "busy"),
            DeliveryResult(delivery: soon, state: .queued, nextAttemptAt: now.addingTimeInterval(-1), pendingDevices: [8], error: "busy"),
            DeliveryResult(delivery: partly, state: .sent, nextAttemptAt: now.addingTimeInterval(-1), pendingDevices: [9]),
        ], owner: "a") == 4)
        #expect(try await setting.queue.record([DeliveryResult(delivery: sent, state: .sent)], owner: "a") == 0, "written once")
        let next = try await setting.queue.claim(owner: "b", limit: 10, lease: .seconds(600), band: .all)
        #expect(Set(Self.users(next)) == ["g0-u2", "g0-u3"], "the sent one left, the later one waits")
        let retried = try #require(next.first { $0.userId == "g0-u2" }), rest = try #require(next.first { $0.userId == "g0-u3" })
        #expect(retried.pendingDevices == [8] && !retried.alreadySent && retried.attempt == 2)
        #expect(rest.pendingDevices == [9] && rest.alreadySent)
        await setting.finish()
    }

    @Test("release hands back all an owner holds, due at once; handBack after its delay, not counting the attempt",
          arguments: Kind.available)
    func handingBack(kind: Kind) async throws {
        let setting = try await Self.make(kind, [Group(priority: 0, users: 3)])
        let held = try await setting.queue.claim(owner: "stopping", limit: 10, lease: .seconds(600), band: .all)
        #expect(held.count == 3)
        let byUser = Dictionary(uniqueKeysWithValues: held.map { ($0.userId, $0) })
        #expect(try await setting.queue.handBack([try #require(byUser["g0-u0"])], owner: "stopping", delay: .seconds(3600), error: "slow") == 1)
        #expect(try await setting.queue.handBack([try #require(byUser["g0-u1"])], owner: "stopping", delay: .zero, error: nil) == 1)
        #expect(try await setting.queue.handBack([try #require(byUser["g0-u2"])], owner: "someone-else", delay: .zero, error: nil) == 0)
        let now = try await setting.queue.claim(owner: "next", limit: 10, lease: .seconds(600), band: .all)
        #expect(Self.users(now) == ["g0-u1"] && now.map(\.attempt) == [1], "handed back at once, its attempt not counted")
        #expect(try await setting.queue.release(owner: "stopping") == 1)
        let released = try await setting.queue.claim(owner: "next", limit: 10, lease: .seconds(600), band: .all)
        #expect(Self.users(released) == ["g0-u2"] && released.map(\.attempt) == [2], "released: due at once; its claim was an attempt")
        await setting.finish()
    }
}

/// The engine's device directory, held the same way: the in-memory one (`FakeDevices`) and
/// PostgreSQL's `SubscriptionStore` (case-insensitive user ids, the gateway's default).
@Suite("Device directory contract: the in-memory directory and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct DeviceDirectoryContractTests {
    typealias Kind = StoreKind

    /// The directory with `users`' devices (each user one iPhone and one Android phone) and
    /// their rows' ids by device id.
    static func make(_ kind: Kind, users: [String]) async throws -> (directory: any DeviceDirectory, ids: [String: Int64], finish: @Sendable () async -> Void) {
        switch kind {
        case .memory:
            var devices: [Device] = []
            var ids: [String: Int64] = [:]
            for (index, user) in users.enumerated() {
                for (offset, platform) in [Platform.ios, .android].enumerated() {
                    let id = Int64(index * 2 + offset + 1)
                    let deviceId = "\(user)-\(platform.rawValue)"
                    ids[deviceId] = id
                    devices.append(Device(id: id, bankClientId: "bank", userId: user, deviceId: deviceId, platform: platform,
                                          pushToken: platform == .ios ? "aa\(id)" : "fcm:\(id)"))
                }
            }
            return (FakeDevices(devices), ids, {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            let store = SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: true))
            var ids: [String: Int64] = [:]
            for (index, user) in users.enumerated() {
                for platform in [Platform.ios, .android] {
                    let deviceId = "\(user)-\(platform.rawValue)"
                    ids[deviceId] = try await store.subscribe(bankClientId: "bank", userId: user, deviceId: deviceId, platform: platform,
                                                              pushToken: platform == .ios ? "aa0\(index)" : "fcm:\(deviceId)")
                }
            }
            return (SubscriptionDirectory(store: store), ids, drop)
        }
    }

    @Test("devices of many users at once, keyed by the folded user id; a user without devices is absent; dead devices removed once",
          arguments: Kind.available)
    func lookUpAndRemove(kind: Kind) async throws {
        let (directory, ids, finish) = try await Self.make(kind, users: ["Anna", "boris"])
        #expect(directory.key(for: "ANNA") == directory.key(for: "anna"))
        let found = try await directory.devices(users: ["anna", "BORIS", "nobody"])
        #expect(Set(found.keys) == [directory.key(for: "Anna"), directory.key(for: "boris")], "nobody has no entry")
        #expect(found[directory.key(for: "Anna")]?.count == 2)
        #expect(found[directory.key(for: "Anna")]?.allSatisfy { $0.userId == "Anna" } == true, "the id as registered")
        let dead = try #require(ids["Anna-IOS"])
        #expect(try await directory.remove(deviceIds: [dead]) == 1)
        #expect(try await directory.remove(deviceIds: [dead]) == 0, "once")
        #expect(try await directory.devices(users: ["anna"])[directory.key(for: "anna")]?.map(\.deviceId) == ["Anna-ANDROID"])
        try await directory.markDelivered(deviceIds: [try #require(ids["boris-IOS"])])
        await finish()
    }
}

/// PostgreSQL's subscriptions behind the engine's seam, as the gateway composes them.
private struct SubscriptionDirectory: DeviceDirectory {
    let store: SubscriptionStore

    func devices(users: [String]) async throws -> [String: [Device]] { try await store.devices(users: users) }
    func key(for user: String) -> String { store.key(for: user) }
    func remove(deviceIds: [Int64]) async throws -> Int { try await store.remove(deviceIds: deviceIds) }
    func markDelivered(deviceIds: [Int64]) async throws { try await store.markDelivered(deviceIds: deviceIds) }
}

/// PostgreSQL's queue behind the engine's seam, as the gateway composes it (PigeonServer declares
/// the same conformance; this test target does not import the composition).
private struct PostgresQueue: DeliveryQueueing {
    let queue: DeliveryQueue

    func claim(owner: String, limit: Int, lease: Duration, band: PriorityBand) async throws -> [ClaimedDelivery] {
        try await queue.claim(owner: owner, limit: limit, lease: lease, band: band)
    }

    func record(_ results: [DeliveryResult], owner: String) async throws -> Int {
        try await queue.record(results, owner: owner)
    }

    func release(owner: String) async throws -> Int {
        try await queue.release(owner: owner)
    }

    func handBack(_ deliveries: [ClaimedDelivery], owner: String, delay: Duration, error: String?) async throws -> Int {
        try await queue.handBack(deliveries, owner: owner, delay: delay, error: error)
    }
}
