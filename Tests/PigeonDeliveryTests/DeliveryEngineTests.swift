import Foundation
import PigeonCore
import PigeonDomain
import PushCore
import Testing
@testable import PigeonDelivery
import PigeonTestSupport

/// The engine's behaviours against in-memory fakes: no database, no network, the clock moved by
/// the test. Each test runs an engine until a condition holds, then stops it.
@Suite("Delivery engine with fakes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct DeliveryEngineTests {
    let clock = ManualClock()

    func notification(_ id: String, perishable: Bool = false) -> PushNotification {
        PushNotification(id: id, recipients: [], timeoutSeconds: 600,
                         pushContent: PushContent(text: "code 1234", type: .pinCode), perishable: perishable)
    }

    func delivery(_ user: String, key: Int64 = 1, position: Int) -> ClaimedDelivery {
        ClaimedDelivery(notificationKey: key, userId: user, userFolded: user.lowercased(), position: position,
                        attempt: 0, expiresAt: clock.now().addingTimeInterval(600))
    }

    func device(_ id: Int64, _ user: String, _ platform: Platform, _ token: String) -> Device {
        Device(id: id, bankClientId: "bank", userId: user, deviceId: "d\(id)", platform: platform, pushToken: token)
    }

    /// An engine over the fakes, running until the returned task is cancelled.
    func start(queue: FakeQueue, notifications: [Int64: PushNotification], devices: FakeDevices,
               senders: [Platform: any PushSending], metrics: MetricsRegistry = MetricsRegistry(),
               configure: (inout DeliveryEngine.Configuration) -> Void = { _ in }, stop: GracefulStop = GracefulStop())
        -> Task<Void, Never> {
        var configuration = DeliveryEngine.Configuration()
        configuration.lease = .seconds(60)
        // The fakes' answers take real time while the test's clock stands still: a gated push
        // held longer than 2 s on a loaded machine must not make its service "slow" here.
        configuration.slowPushAfter = .seconds(3600)
        configure(&configuration)
        let engine = DeliveryEngine(
            configuration: configuration, owner: "test",
            services: .init(queue: queue, notifications: FakeNotifications(notifications: notifications), devices: devices,
                            senders: senders, clock: clock, random: CountingRandom()),
            logger: .silent, metrics: metrics)
        return Task { await engine.run(workers: 2, until: stop) }
    }

    @Test("every device of every recipient is pushed through its platform's service; the deliveries are SENT")
    func mixedPlatforms() async throws {
        let queue = FakeQueue(clock: clock, deliveries: [delivery("A", position: 1), delivery("B", position: 2)])
        let devices = FakeDevices([device(1, "A", .ios, "a-ios"), device(2, "A", .android, "a-android"), device(3, "B", .android, "b-android")])
        let apns = FakeSender(), fcm = FakeSender()
        let engine = start(queue: queue, notifications: [1: notification("n")], devices: devices, senders: [.ios: apns, .android: fcm])
        #expect(await eventually { queue.snapshot.allSatisfy { $0.state == .sent } })
        engine.cancel()
        await engine.value
        #expect(apns.tokens.withLock { $0 } == ["a-ios"])
        #expect(fcm.tokens.withLock { $0 }.sorted() == ["a-android", "b-android"])
        #expect(devices.reached.withLock { $0 }.sorted() == [1, 2, 3])
    }

    @Test("a delivery's outcome is written as soon as its pushes are done, not when the batch's slowest push is")
    func outcomesAsTheyArrive() async throws {
        let queue = FakeQueue(clock: clock, deliveries: [delivery("fast", position: 1), delivery("slow", position: 2)])
        let devices = FakeDevices([device(1, "fast", .ios, "fast"), device(2, "slow", .ios, "slow")])
        let gate = Gate()
        let apns = FakeSender { token, _ in
            if token == "slow" { await gate.wait() }
            return .accepted(id: nil)
        }
        let engine = start(queue: queue, notifications: [1: notification("n")], devices: devices, senders: [.ios: apns])
        #expect(await eventually { queue.row("fast")?.state == .sent })
        // The slow push is still in flight, its delivery still leased.
        #expect(queue.row("slow")?.state == .queued)
        #expect(queue.row("slow")?.leaseOwner == "test")
        gate.open()
        #expect(await eventually { queue.row("slow")?.state == .sent })
        engine.cancel()
        await engine.value
    }

    @Test("outcomes that cannot be written stay leased; when the lease ends they are claimed and pushed again")
    func failedWriteIsClaimedAgain() async throws {
        let queue = FakeQueue(clock: clock, deliveries: [delivery("A", position: 1)])
        queue.failingWrites.withLock { $0 = 3 }
        let devices = FakeDevices([device(1, "A", .ios, "a")])
        let apns = FakeSender()
        let engine = start(queue: queue, notifications: [1: notification("n")], devices: devices, senders: [.ios: apns])
        #expect(await eventually { queue.failedWrites.withLock { $0 } == 3 })
        #expect(queue.row("A")?.state == .queued)
        #expect(apns.pushes(to: "a") == 1)
        clock.advance(by: 61)
        #expect(await eventually { queue.row("A")?.state == .sent })
        engine.cancel()
        await engine.value
        #expect(apns.pushes(to: "a") == 2)
        #expect(queue.row("A")?.attempts == 2)
    }

    @Test("a notification that is gone fails its deliveries without a push")
    func notificationGone() async throws {
        let queue = FakeQueue(clock: clock, deliveries: [delivery("A", key: 7, position: 1)])
        let apns = FakeSender()
        let engine = start(queue: queue, notifications: [:], devices: FakeDevices([device(1, "A", .ios, "a")]), senders: [.ios: apns])
        #expect(await eventually { queue.row("A")?.state == .sendingFailed })
        engine.cancel()
        await engine.value
        #expect(queue.row("A")?.error == "notification not found")
        #expect(apns.tokens.withLock { $0 }.isEmpty)
    }

    @Test("a recipient without a device is INVALID_SUBSCRIPTION; a device on a route this gateway does not serve is left queued for one that does, with the reason, no attempt counted")
    func noDeviceOrNoService() async throws {
        let queue = FakeQueue(clock: clock, deliveries: [delivery("nobody", position: 1), delivery("android", position: 2)])
        let engine = start(queue: queue, notifications: [1: notification("n")], devices: FakeDevices([device(1, "android", .android, "x")]),
                           senders: [.ios: FakeSender()])
        #expect(await eventually { queue.row("nobody")?.state == .invalidSubscription && queue.row("android")?.error != nil })
        engine.cancel()
        await engine.value
        #expect(queue.row("android")?.state == .queued, "another gateway of the fleet may serve it; at its timeout it expires")
        #expect(queue.row("android")?.error?.contains("no gateway serves ANDROID") == true)
        #expect(queue.row("android")?.attempts == 0)
    }

    @Test("one device accepted, one dead, one to retry: the user is SENT, the dead device removed, the reached one noted")
    func devicesDecideTogether() async throws {
        let queue = FakeQueue(clock: clock, deliveries: [delivery("A", position: 1)])
        let devices = FakeDevices([device(1, "A", .ios, "ok"), device(2, "A", .ios, "dead"), device(3, "A", .ios, "busy")])
        let apns = FakeSender { token, _ in
            switch token {
            case "ok": .accepted(id: "1")
            case "dead": .tokenDead(reason: "Unregistered", since: nil)
            default: .retry(reason: "TooManyRequests", after: nil)
            }
        }
        let engine = start(queue: queue, notifications: [1: notification("n")], devices: devices, senders: [.ios: apns])
        #expect(await eventually { queue.row("A")?.state == .sent })
        engine.cancel()
        await engine.value
        #expect(devices.removed.withLock { $0 } == [2])
        #expect(devices.reached.withLock { $0 } == [1])
    }

    @Test("per device: one device 503 then 200, the other 200 → each accepted once, the user SENT at the first attempt")
    func perDeviceRetry() async throws {
        let queue = FakeQueue(clock: clock, deliveries: [delivery("A", position: 1)])
        let devices = FakeDevices([device(1, "A", .ios, "busy"), device(2, "A", .android, "fine")])
        let apns = FakeSender { _, count in count == 1 ? .retry(reason: "ServiceUnavailable", after: nil) : .accepted(id: nil) }
        let fcm = FakeSender()
        let metrics = MetricsRegistry()
        let engine = start(queue: queue, notifications: [1: notification("n")], devices: devices,
                           senders: [.ios: apns, .android: fcm], metrics: metrics)
        #expect(await eventually { queue.row("A")?.state == .sent })
        // SENT, and still in the queue for the busy device only.
        let due = try #require(queue.row("A")?.dueAt)
        #expect(queue.row("A")?.pending == [1])
        clock.advance(by: due.timeIntervalSince(clock.now()) + 1)
        #expect(await eventually { queue.row("A")?.dueAt == nil })
        engine.cancel()
        await engine.value
        #expect(queue.row("A")?.state == .sent)
        #expect(apns.pushes(to: "busy") == 2)
        #expect(fcm.pushes(to: "fine") == 1)
        #expect(devices.reached.withLock { $0 }.sorted() == [1, 2])
        #expect(metrics.counter(Metric.pushRetriesTotal, labels: ["platform": "IOS", "app": "default", "cause": "unavailable"]) == 1)
        #expect(metrics.counter(Metric.deliveriesTotal, labels: ["state": "SENT"]) == 1)
    }

    @Test("a temporary failure waits for the retry schedule's time on the clock, then the push is repeated")
    func retryWaitsForItsTime() async throws {
        let queue = FakeQueue(clock: clock, deliveries: [delivery("A", position: 1)])
        let apns = FakeSender { _, count in count == 1 ? .retry(reason: "ServiceUnavailable", after: .seconds(30)) : .accepted(id: nil) }
        let engine = start(queue: queue, notifications: [1: notification("n")], devices: FakeDevices([device(1, "A", .ios, "a")]),
                           senders: [.ios: apns])
        #expect(await eventually { queue.row("A")?.error == "ServiceUnavailable" })
        let due = try #require(queue.row("A")?.dueAt)
        // At least the service's Retry-After, never past the expiry.
        #expect(due >= clock.now().addingTimeInterval(30))
        #expect(due < clock.now().addingTimeInterval(600))
        #expect(queue.row("A")?.state == .queued)
        #expect(apns.pushes(to: "a") == 1)
        clock.advance(by: due.timeIntervalSince(clock.now()) + 1)
        #expect(await eventually { queue.row("A")?.state == .sent })
        engine.cancel()
        await engine.value
        #expect(apns.pushes(to: "a") == 2)
    }

    @Test("a perishable notification is not retried")
    func perishableFails() async throws {
        let queue = FakeQueue(clock: clock, deliveries: [delivery("A", position: 1)])
        let apns = FakeSender { _, _ in .retry(reason: "ServiceUnavailable", after: nil) }
        let engine = start(queue: queue, notifications: [1: notification("n", perishable: true)],
                           devices: FakeDevices([device(1, "A", .ios, "a")]), senders: [.ios: apns])
        #expect(await eventually { queue.row("A")?.state == .sendingFailed })
        engine.cancel()
        await engine.value
        #expect(apns.pushes(to: "a") == 1)
    }

    @Test("a stopped engine writes the outcomes of the pushes that were in flight before it returns")
    func stopWritesInFlightOutcomes() async throws {
        let queue = FakeQueue(clock: clock, deliveries: (1...20).map { delivery("u\($0)", position: $0) })
        let devices = FakeDevices((1...20).map { device(Int64($0), "u\($0)", .ios, "t\($0)") })
        let gate = Gate()
        let apns = FakeSender { _, _ in
            await gate.wait()
            return .accepted(id: nil)
        }
        let stop = GracefulStop()
        let engine = start(queue: queue, notifications: [1: notification("n")], devices: devices, senders: [.ios: apns], stop: stop)
        #expect(await eventually { apns.tokens.withLock { $0.count } == 20 })
        stop.request()
        gate.open()
        await engine.value
        #expect(queue.snapshot.allSatisfy { $0.state == .sent && $0.leaseOwner == nil })
    }
}
