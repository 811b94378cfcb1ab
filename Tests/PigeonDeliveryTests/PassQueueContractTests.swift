import Foundation
import PigeonDomain
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonDelivery

/// The Wallet pass queue's rules, held to both implementations: the in-memory queue the pass
/// engine's tests run on (`FakePassQueue`, unit tier) and PostgreSQL's `PassStore` (integration
/// tier, a fresh database each case).
@Suite("Pass queue contract: the in-memory queue and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PassQueueContractTests {
    typealias Kind = StoreKind

    static let pass = PassIdentity(passTypeIdentifier: "pass.com.example.card", serialNumber: "contract-1")

    struct Setting {
        var queue: any PassUpdateQueueing
        /// The queue's time: the fake's clock, or this machine's (PostgreSQL's `now()`).
        var now: @Sendable () -> Date
        var finish: @Sendable () async -> Void
    }

    /// A pass updated for Wallets `devices`, each due for its push.
    static func make(_ kind: Kind, devices: [String]) async throws -> Setting {
        switch kind {
        case .memory:
            let clock = ManualClock()
            let queue = FakePassQueue(clock: clock)
            for device in devices {
                queue.add(ClaimedPassPush(pass: pass, deviceLibraryIdentifier: device, pushToken: device + "-token", state: .queued,
                                          version: 2, pushes: 0, failures: 0))
            }
            return Setting(queue: queue, now: { clock.now() }, finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            let store = PassStore(pool: pool)
            let digest = Data(repeating: 7, count: 32)
            _ = try await store.update(pass, authenticationDigest: digest, content: Data("v1".utf8))
            for device in devices {
                _ = try await store.register(device: device, pushToken: device + "-token", for: pass, authenticationDigest: digest,
                                             limits: PassStore.RegistrationLimits())
            }
            // The bank's update queues a push to every registered Wallet.
            _ = try await store.update(pass, authenticationDigest: digest, content: Data("v2".utf8))
            return Setting(queue: PassStoreQueue(store: store), now: { Date() }, finish: drop)
        }
    }

    static func devices(_ claims: [ClaimedPassPush]) -> Set<String> { Set(claims.map(\.deviceLibraryIdentifier)) }

    @Test("due pushes are claimed once under a lease; release hands back all an owner holds, due at once",
          arguments: Kind.available)
    func leasesAndRelease(kind: Kind) async throws {
        let setting = try await Self.make(kind, devices: ["w1", "w2"])
        let held = try await setting.queue.claimPassPushes(owner: "stopping", limit: 10, lease: .seconds(600))
        #expect(Self.devices(held) == ["w1", "w2"] && held.allSatisfy { $0.state == .queued && $0.pushes == 0 })
        #expect(try await setting.queue.claimPassPushes(owner: "other", limit: 10, lease: .seconds(600)).isEmpty, "leased")
        #expect(try await setting.queue.releasePassPushes(owner: "someone-else") == 0)
        #expect(try await setting.queue.releasePassPushes(owner: "stopping") == 2)
        #expect(Self.devices(try await setting.queue.claimPassPushes(owner: "next", limit: 10, lease: .seconds(600))) == ["w1", "w2"])
        await setting.finish()
    }

    @Test("only the holder writes: SENT waits for the fetch deadline and counts the push; a retry waits for its time and counts a failure; a dead token removes the registration; EXPIRED only ends a SENT one",
          arguments: Kind.available)
    func results(kind: Kind) async throws {
        let setting = try await Self.make(kind, devices: ["sent", "later", "soon", "dead", "early"])
        let claimed = try await setting.queue.claimPassPushes(owner: "engine", limit: 10, lease: .seconds(600))
        let byDevice = Dictionary(uniqueKeysWithValues: claimed.map { ($0.deviceLibraryIdentifier, $0) })
        func claim(_ device: String) throws -> ClaimedPassPush { try #require(byDevice[device]) }
        #expect(try await setting.queue.recordPassPushes([PassPushResult(claim: try claim("sent"), change: .sent(fetchDeadline: setting.now()))],
                                                         owner: "not-the-holder") == 0)
        let now = setting.now()
        #expect(try await setting.queue.recordPassPushes([
            PassPushResult(claim: try claim("sent"), change: .sent(fetchDeadline: now.addingTimeInterval(-1))),
            PassPushResult(claim: try claim("later"), change: .retry(at: now.addingTimeInterval(3600), error: "busy")),
            PassPushResult(claim: try claim("soon"), change: .retry(at: now.addingTimeInterval(-1), error: "busy")),
            PassPushResult(claim: try claim("dead"), change: .tokenDead(error: "Unregistered")),
        ], owner: "engine") == 4)
        #expect(try await setting.queue.recordPassPushes([PassPushResult(claim: try claim("early"), change: .expired)], owner: "engine") == 0,
                "a push never sent does not expire: it is still QUEUED")
        #expect(try await setting.queue.releasePassPushes(owner: "engine") == 1, "the early one is still held")
        let next = try await setting.queue.claimPassPushes(owner: "engine", limit: 10, lease: .seconds(600))
        #expect(Self.devices(next) == ["sent", "soon", "early"], "the later one waits; the dead one is gone")
        let sent = try #require(next.first { $0.deviceLibraryIdentifier == "sent" }), soon = try #require(next.first { $0.deviceLibraryIdentifier == "soon" })
        #expect(sent.state == .sent && sent.pushes == 1 && sent.failures == 0)
        #expect(soon.state == .queued && soon.pushes == 0 && soon.failures == 1)
        #expect(try await setting.queue.recordPassPushes([PassPushResult(claim: sent, change: .expired)], owner: "engine") == 1,
                "a SENT one whose fetch never came expires")
        await setting.finish()
    }
}

/// PostgreSQL's pass queue behind the engine's seam, as the gateway composes it.
private struct PassStoreQueue: PassUpdateQueueing {
    let store: PassStore

    func claimPassPushes(owner: String, limit: Int, lease: Duration) async throws -> [ClaimedPassPush] {
        try await store.claimPassPushes(owner: owner, limit: limit, lease: lease)
    }

    func recordPassPushes(_ results: [PassPushResult], owner: String) async throws -> Int {
        try await store.recordPassPushes(results, owner: owner)
    }

    func releasePassPushes(owner: String) async throws -> Int {
        try await store.releasePassPushes(owner: owner)
    }
}
