import Foundation
import PigeonBankService
import PigeonDelivery
import PigeonDeviceAPI
import PigeonDomain
@testable import PigeonServer
import PigeonStore
import PigeonTestSupport
import Testing

/// The activity engine's queue (CONTRACT §9), held to both implementations: the in-memory
/// activities (unit tier) and PostgreSQL's `ActivityStore` (integration tier, a fresh database
/// each case) — what a start, an update and a refresh queue for whom and to which token, leases,
/// a newer event replacing one not yet pushed, and what each outcome leaves behind.
@Suite("Activity queue contract: the in-memory activities and PostgreSQL queue the same pushes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ActivityQueueContractTests {
    typealias Kind = StoreKind
    typealias World = ActivityStoresContractTests.World

    static func make(_ kind: Kind) async throws -> World { try await ActivityStoresContractTests.make(kind) }

    static let startToken = ActivityStoresContractTests.startToken
    static let updateToken = ActivityStoresContractTests.updateToken
    static let lease: Duration = .seconds(600)

    /// Subscribes a device; its row id and push token.
    static func device(_ world: World, _ user: String, _ device: String, platform: Platform = .ios, byte: UInt8) async throws -> (id: Int64, token: String) {
        (try await ActivityStoresContractTests.device(world, user, device, platform: platform, byte: byte),
         ActivityStoresContractTests.pushToken(platform: platform, byte: byte))
    }

    /// Alice's iPhone (with a push-to-start token) and Dana's Android phone, and activity `a-1` started for both.
    static func started(_ world: World) async throws -> (phone: (id: Int64, token: String), pixel: (id: Int64, token: String)) {
        let phone = try await device(world, "alice", "phone", byte: 1)
        let pixel = try await device(world, "dana", "pixel", platform: .android, byte: 2)
        _ = try await world.tokens.saveStartToken(deviceRowId: phone.id, activityType: "TransferAttributes", token: startToken)
        _ = try await world.activities.start(ActivityStart(activityId: "a-1", activityType: "TransferAttributes", recipients: ["alice", "dana"],
                                                           attributes: #"{"transferId":"T-1"}"#, content: ActivityContent(contentState: #"{"step":"accepted"}"#)),
                                             now: Date())
        return (phone, pixel)
    }

    static func update(_ world: World, _ state: String) async throws {
        _ = try await world.activities.event(activityId: "a-1", kind: .update, content: ActivityContent(contentState: state), now: Date())
    }

    static func sent(_ claims: [ClaimedActivityPush]) -> [ActivityPushResult] {
        claims.map { ActivityPushResult(claim: $0, change: .sent) }
    }

    @Test("a start is claimed once for each device it reaches, the iPhone's to its push-to-start token, the Android's to its push token, with the type, attributes and content; held, it is not claimed again until handed back, then as a second attempt",
          arguments: Kind.available)
    func startsAndLeases(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let (phone, pixel) = try await Self.started(world)
        let claims = try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease)
        #expect(claims.count == 2)
        let byDevice = Dictionary(uniqueKeysWithValues: claims.map { ($0.device.id, $0) })
        #expect(byDevice[phone.id]?.token == Self.startToken && byDevice[pixel.id]?.token == pixel.token)
        #expect(claims.allSatisfy { $0.kind == .start && $0.activityType == "TransferAttributes" && $0.attributes == #"{"transferId":"T-1"}"# })
        #expect(claims.allSatisfy { $0.content.contentState == #"{"step":"accepted"}"# && $0.attempts == 1 && $0.timestamp > 0 })
        #expect(try await world.queue.claim(owner: "b", limit: 10, lease: Self.lease).isEmpty, "leased")
        #expect(try await world.queue.release(owner: "a") == 2)
        let again = try await world.queue.claim(owner: "b", limit: 10, lease: Self.lease)
        #expect(again.count == 2 && again.allSatisfy { $0.attempts == 2 })
        await world.finish()
    }

    @Test("once the start is pushed, an update goes at once to the Android phone, to the iPhone only when it sent its update token, and to that token, with a later timestamp; newer events before a push replace it",
          arguments: Kind.available)
    func updatesWaitForTheToken(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let (phone, pixel) = try await Self.started(world)
        let starts = try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease)
        try await world.queue.record(Self.sent(starts), owner: "a")
        #expect(try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease).isEmpty, "both starts are done")
        try await Self.update(world, #"{"step":"checking"}"#)
        try await Self.update(world, #"{"step":"sent"}"#)
        let androidOnly = try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease)
        #expect(androidOnly.map(\.device.id) == [pixel.id])
        #expect(androidOnly.first?.kind == .update && androidOnly.first?.content.contentState == #"{"step":"sent"}"#, "the newer update replaced the first")
        #expect((androidOnly.first?.timestamp ?? 0) > (starts.first?.timestamp ?? .max))
        #expect(try await world.tokens.saveUpdateToken(activityId: "a-1", deviceRowId: phone.id, token: Self.updateToken) == .saved)
        let iPhone = try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease)
        #expect(iPhone.map(\.device.id) == [phone.id] && iPhone.first?.token == Self.updateToken)
        #expect(iPhone.first?.content.contentState == #"{"step":"sent"}"#)
        await world.finish()
    }

    @Test("outcomes: a retry waits for its time; a failure or a drop is done; a dead update token leaves the push waiting for the phone's next token",
          arguments: Kind.available)
    func outcomes(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let (phone, pixel) = try await Self.started(world)
        try await world.queue.record(Self.sent(try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease)), owner: "a")
        _ = try await world.tokens.saveUpdateToken(activityId: "a-1", deviceRowId: phone.id, token: Self.updateToken)
        try await Self.update(world, #"{"step":"checking"}"#)
        let updates = try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease)
        #expect(updates.count == 2)
        let toPhone = try #require(updates.first { $0.device.id == phone.id })
        let toPixel = try #require(updates.first { $0.device.id == pixel.id })
        try await world.queue.record([ActivityPushResult(claim: toPhone, change: .tokenDead(reason: "ExpiredToken")),
                                      ActivityPushResult(claim: toPixel, change: .retry(at: Date().addingTimeInterval(3600), error: "QUOTA_EXCEEDED"))],
                                     owner: "a")
        #expect(try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease).isEmpty, "the retry waits an hour; the iPhone waits for a token")
        let fresh = String(repeating: "7c", count: 32)
        _ = try await world.tokens.saveUpdateToken(activityId: "a-1", deviceRowId: phone.id, token: fresh)
        let retried = try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease)
        #expect(retried.map(\.device.id) == [phone.id] && retried.first?.token == fresh)
        try await world.queue.record(retried.map { ActivityPushResult(claim: $0, change: .failed(error: "BadTopic")) }, owner: "a")
        #expect(try await world.queue.release(owner: "a") == 0, "every outcome was written: nothing is left held")
        #expect(try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease).isEmpty, "the failure is done, the retry still waits")
        await world.finish()
    }

    @Test("a widget refresh is claimed for each device of the recipients, to its push token; pushed, it is done; asked again, it is queued once more",
          arguments: Kind.available)
    func refreshes(kind: Kind) async throws {
        let world = try await Self.make(kind)
        let phone = try await Self.device(world, "alice", "phone", byte: 1)
        let pixel = try await Self.device(world, "alice", "pixel", platform: .android, byte: 2)
        #expect(try await world.activities.refreshWidgets(users: ["alice"]).map(\.devices) == [2])
        let claims = try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease)
        #expect(Set(claims.map(\.device.id)) == [phone.id, pixel.id])
        #expect(claims.allSatisfy { $0.kind == .widgets && $0.token == ($0.device.id == phone.id ? phone.token : pixel.token) })
        try await world.queue.record(Self.sent(claims), owner: "a")
        #expect(try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease).isEmpty)
        _ = try await world.activities.refreshWidgets(users: ["alice"])
        #expect(try await world.queue.claim(owner: "a", limit: 10, lease: Self.lease).count == 2)
        await world.finish()
    }
}
