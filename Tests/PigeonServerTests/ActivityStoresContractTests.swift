import Foundation
import PigeonBankService
import PigeonDelivery
import PigeonDeviceAPI
import PigeonDomain
import PigeonStore
import PigeonTestSupport
import Testing

/// The Live Activity rules the request side relies on (CONTRACT §9), held to both
/// implementations: the in-memory activities the router tests run on (unit tier) and the
/// PostgreSQL activity store the gateway composes (integration tier, a fresh database each
/// case) — who a start reaches, duplicate starts, update tokens, events after the end, the
/// start-token limit, and which devices a refresh reaches.
@Suite("Activity stores contract: the in-memory activities and PostgreSQL keep the same rules", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ActivityStoresContractTests {
    typealias Kind = StoreKind

    /// One implementation: the devices, the bank's side of activities, the phones' side.
    struct World {
        var devices: any DeviceRegistering
        var activities: any ActivityKeeping
        var tokens: any ActivityTokenRecording
        /// The activity engine's side (ActivityQueueContractTests).
        var queue: any ActivityQueueing
        var finish: @Sendable () async -> Void
    }

    static func make(_ kind: Kind) async throws -> World {
        switch kind {
        case .memory:
            let stores = InMemoryStores()
            let activities = InMemoryActivities(devices: stores)
            return World(devices: stores, activities: activities, tokens: activities, queue: activities, finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            let identifiers = UserIdentifiers(caseInsensitive: true)
            let store = ActivityStore(pool: pool, identifiers: identifiers)
            return World(devices: DeviceRegistry(pool: pool, identifiers: identifiers), activities: store, tokens: store, queue: store, finish: drop)
        }
    }

    static let startToken = String(repeating: "5a", count: 32)
    static let updateToken = String(repeating: "6b", count: 32)

    /// The push token of the device ``device(_:_:_:platform:byte:)`` subscribes with `byte`.
    static func pushToken(platform: Platform, byte: UInt8) -> String {
        platform == .ios ? String(repeating: String(format: "%02x", byte), count: 32) : "fcm-\(byte)-" + String(repeating: "x", count: 140)
    }

    /// Subscribes a device; its row id.
    static func device(_ world: World, _ user: String, _ device: String, platform: Platform = .ios, byte: UInt8) async throws -> Int64 {
        try await world.devices.subscribe(DeviceIdentity(bankClientId: "bank", userId: user, deviceId: device, platform: platform),
                                          pushToken: pushToken(platform: platform, byte: byte),
                                          token: StoredToken(digest: Data(repeating: byte, count: 32), expiresAt: Date() + 3600),
                                          override: false, encryptionKey: nil)
    }

    static func start(_ id: String, _ recipients: [String], type: String = "TransferAttributes") -> ActivityStart {
        ActivityStart(activityId: id, activityType: type, recipients: recipients, attributes: #"{"transferId":"T-1"}"#,
                      content: ActivityContent(contentState: #"{"step":"accepted"}"#))
    }

    static func states(_ outcome: ActivityStore.StartOutcome) -> [String: ActivityRecipientState]? {
        guard case .started(let states) = outcome else { return nil }
        return Dictionary(uniqueKeysWithValues: states.map { ($0.user, $0.state) })
    }

    @Test("a start reaches an iPhone with a push-to-start token for the type and an Android device: STARTING; an iPhone without one, or nobody: NO_TOKEN; the same id again is a duplicate",
          arguments: Kind.available)
    func starts(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let alicePhone = try await Self.device(world, "alice", "phone", byte: 1)
        _ = try await Self.device(world, "bob", "phone", byte: 2)
        _ = try await Self.device(world, "dana", "pixel", platform: .android, byte: 3)
        #expect(try await world.tokens.saveStartToken(deviceRowId: alicePhone, activityType: "TransferAttributes", token: Self.startToken))
        let states = Self.states(try await world.activities.start(Self.start("a-1", ["alice", "bob", "dana", "zed"]), now: Date()))
        #expect(states == ["alice": .starting, "bob": .noToken, "dana": .starting, "zed": .noToken], "\(String(describing: states))")
        let other = Self.states(try await world.activities.start(Self.start("a-2", ["alice"], type: "OtherAttributes"), now: Date()))
        #expect(other == ["alice": .noToken], "a start token is for its activity type only")
        guard case .duplicate = try await world.activities.start(Self.start("a-1", ["alice"]), now: Date()) else {
            Issue.record("the same activity id again is a duplicate"); await world.finish(); return
        }
        #expect(try await world.activities.status(activityId: "a-1")?.count == 4)
        #expect(try await world.activities.status(activityId: "never") == nil)
        await world.finish()
    }

    @Test("an update token makes its recipient RUNNING; events queue while the activity lives; after the end every recipient is ENDED and events and tokens are refused as ended; an unknown activity is not found",
          arguments: Kind.available)
    func life(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let phone = try await Self.device(world, "alice", "phone", byte: 1)
        _ = try await world.tokens.saveStartToken(deviceRowId: phone, activityType: "TransferAttributes", token: Self.startToken)
        _ = try await world.activities.start(Self.start("a-1", ["alice"]), now: Date())
        #expect(try await world.tokens.saveUpdateToken(activityId: "never", deviceRowId: phone, token: Self.updateToken) == .notFound)
        #expect(try await world.tokens.saveUpdateToken(activityId: "a-1", deviceRowId: phone, token: Self.updateToken) == .saved)
        #expect(try await world.activities.status(activityId: "a-1")?.map(\.state) == [.running])
        guard case .queued = try await world.activities.event(activityId: "a-1", kind: .update, content: ActivityContent(contentState: "{}"), now: Date()) else {
            Issue.record("an update of a live activity is queued"); await world.finish(); return
        }
        guard case .notFound = try await world.activities.event(activityId: "never", kind: .update, content: ActivityContent(contentState: "{}"), now: Date()) else {
            Issue.record("an unknown activity is not found"); await world.finish(); return
        }
        guard case .queued = try await world.activities.event(activityId: "a-1", kind: .end, content: ActivityContent(), now: Date()) else {
            Issue.record("the end is queued"); await world.finish(); return
        }
        #expect(try await world.activities.status(activityId: "a-1")?.map(\.state) == [.ended])
        guard case .ended = try await world.activities.event(activityId: "a-1", kind: .update, content: ActivityContent(contentState: "{}"), now: Date()) else {
            Issue.record("an event after the end is refused as ended"); await world.finish(); return
        }
        #expect(try await world.tokens.saveUpdateToken(activityId: "a-1", deviceRowId: phone, token: Self.updateToken) == .ended)
        await world.finish()
    }

    @Test("the phone ends an activity on its side: its recipient is ENDED; a device the activity never reached is refused",
          arguments: Kind.available)
    func endedOnDevice(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let phone = try await Self.device(world, "alice", "phone", byte: 1)
        let stranger = try await Self.device(world, "mallory", "phone", byte: 2)
        _ = try await world.tokens.saveStartToken(deviceRowId: phone, activityType: "TransferAttributes", token: Self.startToken)
        _ = try await world.activities.start(Self.start("a-1", ["alice"]), now: Date())
        #expect(try await world.tokens.endedOnDevice(activityId: "a-1", deviceRowId: stranger) == false)
        #expect(try await world.tokens.endedOnDevice(activityId: "never", deviceRowId: phone) == false)
        #expect(try await world.tokens.endedOnDevice(activityId: "a-1", deviceRowId: phone) == true)
        #expect(try await world.activities.status(activityId: "a-1")?.map(\.state) == [.ended])
        await world.finish()
    }

    @Test("a device keeps push-to-start tokens for at most 64 activity types: the 65th is refused, a known type is replaced",
          arguments: Kind.available)
    func startTokenLimit(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let phone = try await Self.device(world, "alice", "phone", byte: 1)
        for index in 0..<ActivityStore.maximumStartTokensPerDevice {
            #expect(try await world.tokens.saveStartToken(deviceRowId: phone, activityType: "Type\(index)", token: Self.startToken))
        }
        #expect(try await world.tokens.saveStartToken(deviceRowId: phone, activityType: "OneTooMany", token: Self.startToken) == false)
        #expect(try await world.tokens.saveStartToken(deviceRowId: phone, activityType: "Type0", token: Self.updateToken), "a known type is replaced")
        await world.finish()
    }

    @Test("a widget refresh reaches every device of the recipients; a controls refresh only their iPhones; a user without devices none",
          arguments: Kind.available)
    func refreshes(kind: Kind) async throws {
        let world = try await Self.make(kind)
        _ = try await Self.device(world, "alice", "phone", byte: 1)
        _ = try await Self.device(world, "alice", "pixel", platform: .android, byte: 2)
        _ = try await Self.device(world, "andy", "pixel", platform: .android, byte: 3)
        let widgets = Dictionary(uniqueKeysWithValues: try await world.activities.refreshWidgets(users: ["alice", "andy", "zed"]).map { ($0.user, $0.devices) })
        #expect(widgets == ["alice": 2, "andy": 1, "zed": 0], "\(widgets)")
        let controls = Dictionary(uniqueKeysWithValues: try await world.activities.refreshControls(users: ["alice", "andy", "zed"]).map { ($0.user, $0.devices) })
        #expect(controls == ["alice": 1, "andy": 0, "zed": 0], "\(controls)")
        await world.finish()
    }
}
