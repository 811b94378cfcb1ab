import Foundation
import PigeonBankService
import PigeonDomain
import PigeonStore
import PigeonTestSupport
import PigeonWallet
import Testing

/// The Wallet pass rules the request side relies on, held to both implementations: the
/// in-memory wallet the router tests run on (unit tier) and the PostgreSQL pass store the
/// gateway composes (integration tier, a fresh database each case) — versions and the token a
/// pass keeps, registrations and their limits, the serials a Wallet is told changed, downloads
/// and `If-Modified-Since`, and what an update queues.
@Suite("Wallet stores contract: the in-memory wallet and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct WalletStoresContractTests {
    typealias Kind = StoreKind

    /// One implementation, both seams, and how to drop it.
    struct World {
        var passes: any PassKeeping
        var wallets: any WalletRegistering
        var finish: @Sendable () async -> Void
    }

    static func make(_ kind: Kind) async throws -> World {
        switch kind {
        case .memory:
            let wallet = InMemoryWallet()
            return World(passes: wallet, wallets: wallet, finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            let store = PassStore(pool: pool)
            return World(passes: store, wallets: store, finish: drop)
        }
    }

    static let pass = PassIdentity(passTypeIdentifier: "pass.com.bank.card", serialNumber: "card-1")
    static let token = Data(repeating: 7, count: 32)
    static let wrongToken = Data(repeating: 8, count: 32)

    @Test("a pass's versions count from 1; its authentication token never changes (another is a mismatch, nothing stored); status lists each Wallet's state",
          arguments: Kind.available)
    func versions(kind: Kind) async throws {
        let world = try await Self.make(kind)
        #expect(try await world.passes.status(Self.pass) == nil)
        #expect(try await world.passes.update(Self.pass, authenticationDigest: Self.token, content: Data("v1".utf8)) == .stored(version: 1, queued: 0))
        #expect(try await world.passes.update(Self.pass, authenticationDigest: Self.wrongToken, content: Data("evil".utf8)) == .tokenMismatch)
        #expect(try await world.passes.update(Self.pass, authenticationDigest: Self.token, content: Data("v2".utf8)) == .stored(version: 2, queued: 0))
        let status = try #require(try await world.passes.status(Self.pass))
        #expect(status.version == 2 && status.devices.isEmpty)
        guard case .pass(let content, _, let version) = try await world.wallets.fetch(Self.pass, authenticationDigest: Self.token, ifModifiedSince: nil) else {
            Issue.record("the pass is downloadable with its token"); await world.finish(); return
        }
        #expect(content == Data("v2".utf8) && version == 2, "the wrong token's content was not stored")
        await world.finish()
    }

    @Test("registrations: only with the pass's token; once per Wallet (again is alreadyRegistered); a Wallet's limit refuses; a pass at its limit gives its oldest place to the newcomer; unregister only with the token, and again is no error",
          arguments: Kind.available)
    func registrations(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let limits = PassStore.RegistrationLimits(perDevice: 2, perPass: 2)
        _ = try await world.passes.update(Self.pass, authenticationDigest: Self.token, content: Data("v1".utf8))
        let other = PassIdentity(passTypeIdentifier: Self.pass.passTypeIdentifier, serialNumber: "card-2")
        let third = PassIdentity(passTypeIdentifier: Self.pass.passTypeIdentifier, serialNumber: "card-3")
        _ = try await world.passes.update(other, authenticationDigest: Self.token, content: Data("o1".utf8))
        _ = try await world.passes.update(third, authenticationDigest: Self.token, content: Data("t1".utf8))
        let wallets = world.wallets
        func register(_ device: String, _ pass: PassIdentity = Self.pass, token: Data = Self.token) async throws -> PassStore.RegistrationResult {
            try await wallets.register(device: device, pushToken: "push-\(device)", for: pass, authenticationDigest: token, limits: limits)
        }
        #expect(try await register("w1", token: Self.wrongToken) == .unauthorized)
        #expect(try await register("w1", PassIdentity(passTypeIdentifier: "pass.none", serialNumber: "x")) == .unauthorized)
        #expect(try await register("w1") == .created)
        #expect(try await register("w1") == .alreadyRegistered)
        #expect(try await register("w1", other) == .created)
        guard case .limitReached = try await register("w1", third) else { Issue.record("a Wallet past its limit is refused"); await world.finish(); return }
        #expect(try await register("w2") == .created)
        #expect(try await register("w3") == .created, "a pass at its limit takes the newcomer")
        let devices = try #require(try await world.passes.status(Self.pass)).devices.map(\.device).sorted()
        #expect(devices == ["w2", "w3"], "the oldest registration gave its place")
        #expect(try await world.wallets.unregister(device: "w2", from: Self.pass, authenticationDigest: Self.wrongToken) == false)
        #expect(try await world.wallets.unregister(device: "w2", from: Self.pass, authenticationDigest: Self.token) == true)
        #expect(try await world.wallets.unregister(device: "w2", from: Self.pass, authenticationDigest: Self.token) == true, "already gone: a DELETE is idempotent")
        #expect(try #require(try await world.passes.status(Self.pass)).devices.map(\.device) == ["w3"])
        await world.finish()
    }

    @Test("an update queues every registered Wallet; the serials a Wallet is told changed: all of its passes of the type without a tag, the changed one after its tag, none for a type it has none of",
          arguments: Kind.available)
    func updates(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let other = PassIdentity(passTypeIdentifier: Self.pass.passTypeIdentifier, serialNumber: "card-2")
        for pass in [Self.pass, other] {
            _ = try await world.passes.update(pass, authenticationDigest: Self.token, content: Data("v1".utf8))
            _ = try await world.wallets.register(device: "w1", pushToken: "push-w1", for: pass, authenticationDigest: Self.token, limits: .init())
        }
        _ = try await world.wallets.register(device: "w2", pushToken: "push-w2", for: Self.pass, authenticationDigest: Self.token, limits: .init())
        #expect(try await world.wallets.serialsUpdated(device: "w1", passType: "pass.other", since: nil) == nil)
        let all = try #require(try await world.wallets.serialsUpdated(device: "w1", passType: Self.pass.passTypeIdentifier, since: nil))
        #expect(all.serials == ["card-1", "card-2"])
        #expect(try await world.passes.update(Self.pass, authenticationDigest: Self.token, content: Data("v2".utf8)) == .stored(version: 2, queued: 2))
        let status = try #require(try await world.passes.status(Self.pass))
        #expect(status.version == 2 && status.devices.map(\.state) == [.queued, .queued], "\(status.devices)")
        let changed = try await world.wallets.serialsUpdated(device: "w1", passType: Self.pass.passTypeIdentifier, since: all.lastUpdated)
        #expect(changed?.serials == ["card-1"], "only the pass changed after the tag: \(String(describing: changed))")
        await world.finish()
    }

    @Test("a download: refused without the pass's token; the content and version otherwise; not modified for If-Modified-Since at or after Last-Modified, modified before it",
          arguments: Kind.available)
    func downloads(kind: Kind) async throws {
        let world = try await Self.make(kind)
        _ = try await world.passes.update(Self.pass, authenticationDigest: Self.token, content: Data("v1".utf8))
        #expect(try await world.wallets.fetch(Self.pass, authenticationDigest: Self.wrongToken, ifModifiedSince: nil) == .unauthorized)
        guard case .pass(_, let modifiedAt, 1) = try await world.wallets.fetch(Self.pass, authenticationDigest: Self.token, ifModifiedSince: nil) else {
            Issue.record("the first version is downloaded"); await world.finish(); return
        }
        #expect(modifiedAt.timeIntervalSince1970 == modifiedAt.timeIntervalSince1970.rounded(.down), "Last-Modified is in whole seconds, as HTTP dates are")
        #expect(try await world.wallets.fetch(Self.pass, authenticationDigest: Self.token, ifModifiedSince: modifiedAt) == .notModified(modifiedAt: modifiedAt))
        #expect(try await world.wallets.fetch(Self.pass, authenticationDigest: Self.token, ifModifiedSince: modifiedAt.addingTimeInterval(5)) == .notModified(modifiedAt: modifiedAt))
        guard case .pass(let content, _, _) = try await world.wallets.fetch(Self.pass, authenticationDigest: Self.token, ifModifiedSince: modifiedAt.addingTimeInterval(-1)) else {
            Issue.record("an older copy downloads the pass"); await world.finish(); return
        }
        #expect(content == Data("v1".utf8))
        _ = try await world.passes.update(Self.pass, authenticationDigest: Self.token, content: Data("v2".utf8))
        guard case .pass(let newer, let newModifiedAt, 2) = try await world.wallets.fetch(Self.pass, authenticationDigest: Self.token, ifModifiedSince: modifiedAt) else {
            Issue.record("a new version is downloaded by a Wallet that had the old"); await world.finish(); return
        }
        #expect(newer == Data("v2".utf8) && newModifiedAt > modifiedAt, "Last-Modified grows with each version, even within a second")
        await world.finish()
    }

    @Test("a Wallet that downloads the version it was pushed is FETCHED; the others still wait",
          arguments: Kind.available)
    func fetched(kind: Kind) async throws {
        let world = try await Self.make(kind)
        _ = try await world.passes.update(Self.pass, authenticationDigest: Self.token, content: Data("v1".utf8))
        for device in ["w1", "w2"] {
            _ = try await world.wallets.register(device: device, pushToken: "push-\(device)", for: Self.pass, authenticationDigest: Self.token, limits: .init())
        }
        _ = try await world.passes.update(Self.pass, authenticationDigest: Self.token, content: Data("v2".utf8))
        // w2 asks which passes changed, then downloads: the download is w2's.
        _ = try await world.wallets.serialsUpdated(device: "w2", passType: Self.pass.passTypeIdentifier, since: nil)
        _ = try await world.wallets.fetch(Self.pass, authenticationDigest: Self.token, ifModifiedSince: nil)
        let states = Dictionary(uniqueKeysWithValues: try #require(try await world.passes.status(Self.pass)).devices.map { ($0.device, $0.state) })
        #expect(states == ["w1": .queued, "w2": .fetched], "\(states)")
        await world.finish()
    }
}
