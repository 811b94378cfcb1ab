import Foundation
import PigeonCore
import PigeonDomain
import PigeonTestSupport
import PushCore
import Synchronization
import Testing
@testable import PigeonDelivery

/// The Live Activity engine on the in-memory activities (held to PostgreSQL by
/// ActivityQueueContractTests): what it pushes, what it writes, how it stops.
@Suite("Live Activity engine with fakes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ActivityEngineTests {
    static let startToken = String(repeating: "5a", count: 32)

    /// Alice's iPhone (a push-to-start token) and Dana's Android phone (and, with `tablet`, her
    /// Android tablet), and activity `a-1` started for both.
    static func world(tablet: Bool = false) async throws -> (activities: InMemoryActivities, phone: String, pixel: String) {
        let stores = InMemoryStores()
        let activities = InMemoryActivities(devices: stores)
        let pixelToken = "fcm-" + String(repeating: "x", count: 140)
        let phone = try await stores.subscribe(DeviceIdentity(bankClientId: "bank", userId: "alice", deviceId: "phone", platform: .ios),
                                               pushToken: String(repeating: "01", count: 32),
                                               token: StoredToken(digest: Data(repeating: 1, count: 32), expiresAt: Date() + 3600),
                                               override: false, encryptionKey: nil)
        _ = try await stores.subscribe(DeviceIdentity(bankClientId: "bank", userId: "dana", deviceId: "pixel", platform: .android),
                                       pushToken: pixelToken, token: StoredToken(digest: Data(repeating: 2, count: 32), expiresAt: Date() + 3600),
                                       override: false, encryptionKey: nil)
        if tablet {
            _ = try await stores.subscribe(DeviceIdentity(bankClientId: "bank", userId: "dana", deviceId: "tablet", platform: .android),
                                           pushToken: "fcm-tablet-" + String(repeating: "y", count: 140),
                                           token: StoredToken(digest: Data(repeating: 3, count: 32), expiresAt: Date() + 3600),
                                           override: false, encryptionKey: nil)
        }
        _ = try await activities.saveStartToken(deviceRowId: phone, activityType: "TransferAttributes", token: startToken)
        _ = try await activities.start(ActivityStart(activityId: "a-1", activityType: "TransferAttributes", recipients: ["alice", "dana"],
                                                     attributes: #"{"transferId":"T-1"}"#, content: ActivityContent(contentState: #"{"step":"accepted"}"#)),
                                       now: Date())
        return (activities, startToken, pixelToken)
    }

    static func engine(_ activities: InMemoryActivities, _ pusher: FakeActivityPusher) -> ActivityEngine {
        ActivityEngine(queue: activities, pusher: pusher, owner: "test", wake: WakeSignal(), random: CountingRandom(),
                       metrics: MetricsRegistry(), logger: .silent)
    }

    @Test("a start goes to the iPhone's push-to-start token and the Android phone's push token, once each; the Android recipient is RUNNING, the iPhone's STARTING until its phone sends an update token")
    func pushesTheStart() async throws {
        let (activities, phone, pixel) = try await Self.world()
        let pusher = FakeActivityPusher()
        let stop = GracefulStop()
        let running = Task { await Self.engine(activities, pusher).run(until: stop) }
        #expect(await eventuallyAwaiting { (try? await activities.status(activityId: "a-1"))?.map(\.state) == [.starting, .running] })
        #expect(Set(pusher.pushed.withLock { $0 }) == [phone, pixel] && pusher.pushed.withLock { $0 }.count == 2)
        stop.request()
        await running.value
        #expect(try await activities.release(owner: "test") == 0, "nothing left held")
    }

    @Test("stopped with pushes on the wire: they finish and are written; the one behind them in its batch is not started, is handed back at once, and goes at the next start")
    func stopHandsBack() async throws {
        let (activities, _, _) = try await Self.world(tablet: true)
        let gate = Gate()
        let pusher = FakeActivityPusher(answering: { await gate.wait() })
        let stop = GracefulStop()
        let running = Task { await Self.engine(activities, pusher).run(until: stop) }
        // The iPhone's start and the first Android device's are on the wire; the second Android
        // device's waits behind the first in their batch.
        #expect(await eventually { pusher.pushed.withLock { $0 }.count == 2 })
        stop.request()
        gate.open()
        await running.value
        let pushedBeforeStop = pusher.pushed.withLock { $0 }.count
        #expect(pushedBeforeStop == 2, "a push started after the stop")
        #expect(try await activities.release(owner: "test") == 0, "the engine handed back what it held")
        // What was not pushed is due again at once, for the next engine.
        let next = FakeActivityPusher()
        let restart = GracefulStop()
        let again = Task { await Self.engine(activities, next).run(until: restart) }
        #expect(await eventually { next.pushed.withLock { $0 }.count == 1 })
        restart.request()
        await again.value
        #expect(try await activities.claim(owner: "probe", limit: 10, lease: .seconds(1)).isEmpty, "every push written, nothing left queued")
        #expect(next.pushed.withLock { $0 }.count == 1 && pushedBeforeStop + 1 == 3, "each device pushed once in all")
    }
}
