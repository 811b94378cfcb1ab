import Foundation
@testable import PigeonConfiguration
import PigeonCore
import PigeonDelivery
import PigeonDomain
@testable import PigeonServer
import PigeonSimulator
import PigeonTestSupport
import PushCore
import Testing

/// The Wallet and Live Activity engines' push services (CONTRACT §7, §9), held to both
/// implementations: the fakes their unit tests run on and the gateway's pushers — APNs and FCM
/// over HTTP/2 to the simulator (integration tier). One outcome per token, in order; a token the
/// service declared dead said so; a caller that stopped before the call gets every push back
/// unpushed.
@Suite("Pushers contract: the engines' fake pushers and the gateway's answer alike", .serialized, .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PushersContractTests {
    enum Kind: String, CustomStringConvertible, CaseIterable {
        case fake, simulator
        var description: String { rawValue }
        static var available: [Kind] { TestTier.runsIntegration ? [.fake, .simulator] : [.fake] }
    }

    static let live = String(repeating: "a1", count: 32), dead = String(repeating: "d0", count: 32), other = String(repeating: "b2", count: 32)
    static let liveFCM = "fcm-live", deadFCM = "fcm-dead", otherFCM = "fcm-other"

    /// The pushers, the tokens each service got, and how to stop.
    struct Pushers {
        var passes: any PassPushing
        var activities: any ActivityPushing
        var sentAPNs: @Sendable () -> [String]
        var sentFCM: @Sendable () -> [String]
        var finish: @Sendable () -> Void
    }

    static func make(_ kind: Kind) async throws -> Pushers {
        switch kind {
        case .fake:
            let passes = FakePassPusher(outcomes: [dead: [.tokenDead(reason: "Unregistered", since: nil)]])
            let activities = FakeActivityPusher(outcomes: [dead: .tokenDead(reason: "Unregistered", since: nil),
                                                           deadFCM: .tokenDead(reason: "UNREGISTERED", since: nil)])
            return Pushers(passes: passes, activities: activities,
                           sentAPNs: { Array(passes.tokens) + activities.pushed.withLock { $0 }.filter { !$0.hasPrefix("fcm") } },
                           sentFCM: { activities.pushed.withLock { $0 }.filter { $0.hasPrefix("fcm") } }, finish: {})
        case .simulator:
            let fixture = try await SimulatorFixture.start()
            fixture.simulator.apns.setFaults(FaultRules([dead: .init(.unregistered)]))
            fixture.simulator.fcm.setFaults(FaultRules([deadFCM: .init(.unregistered)]))
            let configuration = try GatewayConfiguration.parse(text: fixture.simulator.configurationSnippet, name: "contract")
            let metrics = MetricsRegistry()
            let transports = try PushTransports(configuration: configuration, logger: .silent, metrics: metrics)
            let passes = try PassPushers(configuration: configuration, keyTransport: transports.defaultAppKeyTransport)
            let apns = fixture.simulator.apns, fcm = fixture.simulator.fcm
            return Pushers(passes: passes, activities: ActivityPushers(apns: transports.activityAPNs, senders: transports.urgentSenders),
                           sentAPNs: { apns.deliveries.map(\.deviceToken) }, sentFCM: { fcm.deliveries.map(\.registrationToken) },
                           finish: {
                               (transports.clients + passes.clients).forEach { $0.client.shutdown(abandonRunning: true) }
                               fixture.stop()
                           })
        }
    }

    static let ios = PushRoute(platform: .ios), android = PushRoute(platform: .android)
    static func widgets(_ topic: String) -> APNsPreparedMessage { LiveActivityRequests.widgets(appTopic: topic) }

    @Test("one outcome per token, in order: the live ones accepted, the dead one declared dead; each live push delivered once", arguments: Kind.available)
    func outcomesInOrder(kind: Kind) async throws {
        let pushers = try await Self.make(kind)
        defer { pushers.finish() }
        let pass = await pushers.passes.pushUpdates(passTypeIdentifier: SimulatorCredentials.topic, tokens: [Self.live, Self.dead, Self.other])
        #expect(pass.map(\.label) == ["accepted", "token_dead", "accepted"], "\(pass)")
        let widgets = await pushers.activities.pushAPNs(Self.widgets, route: Self.ios, tokens: [Self.dead, Self.live])
        #expect(widgets.map(\.label) == ["token_dead", "accepted"], "\(widgets)")
        let data = await pushers.activities.pushData(LiveActivityRequests.androidWidgets(expiresAt: Date().addingTimeInterval(3600)),
                                                     route: Self.android, tokens: [Self.liveFCM, Self.deadFCM, Self.otherFCM])
        #expect(data.map(\.label) == ["accepted", "token_dead", "accepted"], "\(data)")
        // What reached a device (a service keeps no delivery for a dead token): each live push once.
        #expect(pushers.sentAPNs().filter { $0 != Self.dead }.sorted() == [Self.live, Self.other, Self.live].sorted())
        #expect(pushers.sentFCM().filter { $0 != Self.deadFCM }.sorted() == [Self.liveFCM, Self.otherFCM].sorted())
    }

    @Test("a caller stopped before the call (its task cancelled) gets every push back deferred, and none is sent", arguments: Kind.available)
    func stoppedCaller(kind: Kind) async throws {
        let pushers = try await Self.make(kind)
        defer { pushers.finish() }
        let answers = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let pass = await pushers.passes.pushUpdates(passTypeIdentifier: SimulatorCredentials.topic, tokens: [Self.live, Self.other])
            let widgets = await pushers.activities.pushAPNs(Self.widgets, route: Self.ios, tokens: [Self.live])
            let data = await pushers.activities.pushData(LiveActivityRequests.androidWidgets(expiresAt: Date().addingTimeInterval(3600)),
                                                         route: Self.android, tokens: [Self.liveFCM])
            return pass + widgets + data
        }.value
        #expect(answers == Array(repeating: .deferred, count: 4), "\(answers)")
        #expect(pushers.sentAPNs().isEmpty && pushers.sentFCM().isEmpty)
    }
}
