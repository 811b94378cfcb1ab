import Foundation
import PigeonBankService
@testable import PigeonConfiguration
import PigeonCore
import PigeonDomain
@testable import PigeonServer
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import PushCore
import Testing

/// Live Activity broadcast channels (CONTRACT §9) as the SOAP service relies on them, held to
/// both implementations: the in-memory channels the router tests run on (unit tier) and the
/// gateway's `ActivityChannels` — Apple's channel management API and APNs broadcasts of the
/// simulator, the channels stored in PostgreSQL (integration tier).
@Suite("Broadcast channels contract: the in-memory channels and APNs with PostgreSQL answer alike", .serialized, .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct BroadcastChannelsContractTests {
    enum Kind: String, CustomStringConvertible, CaseIterable {
        case memory, apns
        var description: String { rawValue }
        static var available: [Kind] { TestDatabase.isAvailable ? [.memory, .apns] : [.memory] }
    }

    /// The channels as the seam; Apple dropping a channel or the default app's capability; the
    /// timestamps of the broadcasts a channel carried, in order; how to stop.
    struct Channels {
        var seam: any BroadcastChannels
        var appleDrops: @Sendable (String) -> Void
        var appleRemovesCapability: @Sendable () -> Void
        var timestamps: @Sendable (String) -> [Int64]
        var finish: @Sendable () async -> Void
    }

    static func make(_ kind: Kind) async throws -> Channels {
        switch kind {
        case .memory:
            let channels = InMemoryBroadcastChannels()
            return Channels(seam: channels, appleDrops: { channels.drop(channelId: $0) }, appleRemovesCapability: { channels.refuse(appId: "") },
                            timestamps: { channels.channels[$0]?.broadcasts.map(\.timestamp) ?? [] }, finish: {})
        case .apns:
            let fixture = try await SimulatorFixture.start()
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            let configuration = try GatewayConfiguration.parse(text: fixture.simulator.configurationSnippet, name: "contract")
            let metrics = MetricsRegistry()
            let transports = try PushTransports(configuration: configuration, logger: .silent, metrics: metrics)
            let seam = ActivityChannels(apps: transports.channelAPNs, store: ActivityStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false)),
                                        metrics: metrics, logger: .silent)
            let apple = fixture.simulator.apns.channels
            return Channels(
                seam: seam, appleDrops: { apple.drop(channelId: $0) },
                appleRemovesCapability: { apple.removeCapability(bundleId: SimulatorCredentials.topic) },
                timestamps: { channel in
                    apple.broadcasts.filter { $0.channelId == channel }.compactMap { broadcast in
                        let payload = (try? JSONSerialization.jsonObject(with: broadcast.payload)) as? [String: Any]
                        return ((payload?["aps"] as? [String: Any])?["timestamp"] as? NSNumber)?.int64Value
                    }
                },
                finish: {
                    transports.clients.forEach { $0.client.shutdown(abandonRunning: true) }
                    fixture.stop()
                    await drop()
                })
        }
    }

    static let event = LiveActivityEvent(kind: .update, timestamp: 0, contentState: #"{"score":"1:0"}"#)

    /// Whether `result` failed as not found.
    static func notFound<T>(_ result: Result<T, BroadcastChannelFailure>) -> Bool {
        if case .failure(.notFound) = result { return true }
        return false
    }

    @Test("a channel is created, broadcast to with timestamps that grow even within one second, and deleted; after that a broadcast and a second delete are not found",
          arguments: Kind.available)
    func lifecycle(kind: Kind) async throws {
        let channels = try await Self.make(kind)
        let channel = try await channels.seam.create(appId: "", activityType: "Score", storagePolicy: 1).get()
        #expect(!channel.isEmpty)
        let now = Date()
        _ = try await channels.seam.broadcast(channelId: channel, event: Self.event, now: now).get()
        _ = try await channels.seam.broadcast(channelId: channel, event: Self.event, now: now).get()
        let stamps = channels.timestamps(channel)
        #expect(stamps.count == 2)
        #expect(stamps.first.map { $0 >= Int64(now.timeIntervalSince1970.rounded(.down)) } == true, "\(stamps)")
        #expect(stamps.count == 2 && stamps[1] > stamps[0], "\(stamps)")
        _ = try await channels.seam.delete(channelId: channel).get()
        #expect(Self.notFound(try await channels.seam.broadcast(channelId: channel, event: Self.event, now: Date())))
        #expect(Self.notFound(try await channels.seam.delete(channelId: channel)))
        await channels.finish()
    }

    @Test("a channel Apple dropped: deleting it is done (it is gone either way); another one's broadcast is not found, and it is forgotten",
          arguments: Kind.available)
    func droppedByApple(kind: Kind) async throws {
        let channels = try await Self.make(kind)
        let first = try await channels.seam.create(appId: "", activityType: "Score", storagePolicy: 0).get()
        let second = try await channels.seam.create(appId: "", activityType: "Score", storagePolicy: 0).get()
        channels.appleDrops(first)
        channels.appleDrops(second)
        _ = try await channels.seam.delete(channelId: first).get()
        #expect(Self.notFound(try await channels.seam.broadcast(channelId: second, event: Self.event, now: Date())))
        #expect(Self.notFound(try await channels.seam.delete(channelId: second)), "forgotten after the broadcast found it gone")
        await channels.finish()
    }

    @Test("an app whose bundle has no broadcast capability is refused a channel, with a reason; an unknown channel is not found",
          arguments: Kind.available)
    func refusals(kind: Kind) async throws {
        let channels = try await Self.make(kind)
        channels.appleRemovesCapability()
        guard case .failure(.refused(let reason)) = try await channels.seam.create(appId: "", activityType: "Score", storagePolicy: 0) else {
            Issue.record("a bundle without the capability got a channel")
            await channels.finish()
            return
        }
        #expect(!reason.isEmpty)
        let unknown = Data("no-such-channel".utf8).base64EncodedString()
        #expect(Self.notFound(try await channels.seam.broadcast(channelId: unknown, event: Self.event, now: Date())))
        #expect(Self.notFound(try await channels.seam.delete(channelId: unknown)))
        await channels.finish()
    }
}
