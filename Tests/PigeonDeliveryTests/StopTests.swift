import Foundation
import PigeonCore
import PigeonDomain
import PushCore
import Synchronization
import Testing
@testable import PigeonDelivery
import PigeonTestSupport

/// How the engine stops (CONTRACT §10): no push starts after the stop, what was not pushed goes
/// back to the queue at once, the pushes on the wire finish and their outcomes are written as
/// they come — not held until the last one is done. The stop is the graceful one (the engine's
/// task alive): the fake queue, like the database pool, refuses writes from a cancelled task.
@Suite("Delivery engine stopping", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct StopTests {
    let clock = ManualClock()

    /// 20 recipients with an iPhone each; at most 4 pushes in flight, one claim takes them all.
    func start(queue: FakeQueue, sender: any PushSending, stop: GracefulStop) -> Task<Void, Never> {
        var configuration = DeliveryEngine.Configuration()
        configuration.batchSize = 20
        configuration.maxConcurrentPushes = 4
        configuration.slowPushAfter = .seconds(3600)
        let devices = FakeDevices((1...20).map {
            Device(id: Int64($0), bankClientId: "bank", userId: "u\($0)", deviceId: "d\($0)", platform: .ios, pushToken: "t\($0)")
        })
        let notification = PushNotification(id: "n", recipients: [], timeoutSeconds: 600, pushContent: PushContent(text: "sale", type: .message))
        let engine = DeliveryEngine(
            configuration: configuration, owner: "test",
            services: .init(queue: queue, notifications: FakeNotifications(notifications: [1: notification]), devices: devices,
                            senders: [.ios: sender], clock: clock, random: CountingRandom()),
            logger: .silent, metrics: MetricsRegistry())
        return Task { await engine.run(workers: 1, until: stop) }
    }

    var deliveries: [ClaimedDelivery] {
        (1...20).map {
            ClaimedDelivery(notificationKey: 1, userId: "u\($0)", userFolded: "u\($0)", position: $0, attempt: 0,
                            expiresAt: clock.now().addingTimeInterval(600))
        }
    }

    @Test("stopped with 4 pushes on the wire and 16 waiting: the 16 go back to the queue at once, unpushed and uncounted; the first answer is written while the others are still on the wire; no push starts after the stop")
    func stopMidBatch() async throws {
        let queue = FakeQueue(clock: clock, deliveries: deliveries)
        // The first push to start is answered when `first` opens, the others when `rest` opens.
        let first = Gate(), rest = Gate()
        let started = Mutex(0)
        let sender = FakeSender { _, _ in
            let order = started.withLock { count in
                count += 1
                return count
            }
            await (order == 1 ? first : rest).wait()
            return .accepted(id: nil)
        }
        let stop = GracefulStop()
        let engine = start(queue: queue, sender: sender, stop: stop)
        #expect(await eventually { sender.tokens.withLock { $0.count } == 4 })
        stop.request()
        first.open()
        // The engine is still stopping (three pushes on the wire), yet the first outcome is
        // written and the 16 pushes that never started are back in the queue, due now.
        #expect(await eventually { queue.snapshot.filter { $0.state == .sent }.count == 1 && queue.handedBack.withLock { $0 } == 16 })
        let waiting = queue.snapshot.filter { $0.state == .queued && $0.leaseOwner == nil }
        #expect(waiting.count == 16)
        #expect(waiting.allSatisfy { $0.attempts == 0 && ($0.dueAt ?? .distantFuture) <= clock.now() })
        rest.open()
        await engine.value
        #expect(sender.tokens.withLock { $0.count } == 4, "a push started after the stop")
        #expect(queue.snapshot.filter { $0.state == .sent }.count == 4)
        #expect(queue.snapshot.allSatisfy { $0.leaseOwner == nil })
    }

    @Test("a hard stop (the task cancelled after the grace) ends the engine although its writes are refused: the deliveries stay leased, for the owner's hand-back")
    func hardStop() async throws {
        let queue = FakeQueue(clock: clock, deliveries: deliveries)
        let gate = Gate()
        let sender = FakeSender { _, _ in
            await gate.wait()
            return .accepted(id: nil)
        }
        let engine = start(queue: queue, sender: sender, stop: GracefulStop())
        #expect(await eventually { sender.tokens.withLock { $0.count } == 4 })
        engine.cancel()
        gate.open()
        await engine.value
        #expect(sender.tokens.withLock { $0.count } == 4, "a push started after the stop")
        #expect(queue.snapshot.allSatisfy { $0.leaseOwner == "test" })
        #expect(try await queue.release(owner: "test") == 20)
    }

    @Test("a claim loop waiting for room in its lane stops at once when the engine stops")
    func stopWhileWaitingForRoom() async throws {
        let allowance = ClaimAllowance(inFlight: 4, batchSize: 20)
        // 20 of 24 held: less than a quarter of a batch fits, so the next claim waits.
        #expect(await allowance.reserve() == 20)
        // Nothing is ever released: parked, it can only return by being cancelled.
        let waiter = Task { await allowance.reserve() }
        #expect(await eventually { allowance.waiters == 1 })
        waiter.cancel()
        #expect(await waiter.value == 0)
        #expect(allowance.held == 20)
    }
}
