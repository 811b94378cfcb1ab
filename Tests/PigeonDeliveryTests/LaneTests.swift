import Foundation
import PigeonCore
import PigeonDomain
import PushCore
import Synchronization
import Testing
@testable import PigeonDelivery
import PigeonTestSupport

/// The engine's lanes and bounds against in-memory fakes: urgent deliveries overtake a blast
/// whose pushes fill every stream, the engine holds no more than it can push plus one batch, and
/// nothing whose time ran out is pushed.
@Suite("Delivery engine lanes with fakes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct LaneTests {
    func delivery(_ user: String, key: Int64, position: Int, expiresAt: Date, priority: Int = 0) -> ClaimedDelivery {
        ClaimedDelivery(notificationKey: key, userId: user, userFolded: user.lowercased(), position: position,
                        attempt: 0, expiresAt: expiresAt, priority: priority)
    }

    func device(_ id: Int64, _ user: String, _ token: String) -> Device {
        Device(id: id, bankClientId: "bank", userId: user, deviceId: "d\(id)", platform: .ios, pushToken: token)
    }

    func notification(_ id: String, priority: Int = 0) -> PushNotification {
        PushNotification(id: id, recipients: [], timeoutSeconds: 600, pushContent: PushContent(text: "text", type: .pinCode), priority: priority)
    }

    func engine(queue: FakeQueue, notifications: [Int64: PushNotification], devices: FakeDevices, clock: any DeliveryClock,
                senders: [Platform: any PushSending], urgentSenders: [Platform: any PushSending] = [:], wake: QueueWake? = nil,
                configure: (inout DeliveryEngine.Configuration) -> Void) -> DeliveryEngine {
        var configuration = DeliveryEngine.Configuration()
        // The fakes' answers take real time while the test's clock stands still: a gated push
        // held longer than 2 s on a loaded machine must not make its service "slow" here
        // (the tests of slow services set it back).
        configuration.slowPushAfter = .seconds(3600)
        configure(&configuration)
        return DeliveryEngine(
            configuration: configuration, owner: "test",
            services: .init(queue: queue, notifications: FakeNotifications(notifications: notifications), devices: devices,
                            senders: senders, urgentSenders: urgentSenders, wake: wake, clock: clock, random: CountingRandom()),
            logger: .silent, metrics: MetricsRegistry())
    }

    @Test("an urgent send overtakes a blast whose pushes fill every stream: woken at once, pushed through its own sender")
    func urgentOvertakesBlast() async throws {
        let clock = PatientClock()
        let expiry = clock.now().addingTimeInterval(600)
        let queue = FakeQueue(clock: clock, deliveries: (1...200).map { delivery("blast\($0)", key: 1, position: $0, expiresAt: expiry) })
        let devices = FakeDevices((1...200).map { device(Int64($0), "blast\($0)", "b\($0)") } + [device(1000, "payer", "code-phone")])
        let gate = Gate()
        let bulk = FakeSender { _, _ in
            await gate.wait()
            return .accepted(id: nil)
        }
        let urgent = FakeSender()
        let wake = QueueWake(urgentPriority: 10)
        let running = engine(queue: queue, notifications: [1: notification("blast"), 2: notification("code", priority: 10)],
                             devices: devices, clock: clock, senders: [.ios: bulk], urgentSenders: [.ios: urgent], wake: wake) {
            $0.batchSize = 50
            $0.maxConcurrentPushes = 20
            // An idle lane would not look again within the test: only the wake can start the code's claim.
            $0.idlePoll = .seconds(3600)
        }
        let task = Task { await running.run(workers: 2) }
        // Every stream the blast may use is taken, and held.
        #expect(await eventually { bulk.tokens.withLock { $0.count } >= 20 })
        queue.add([delivery("payer", key: 2, position: 1, expiresAt: expiry, priority: 10)])
        wake.stored(priority: 10)
        #expect(await eventually { queue.row("payer")?.state == .sent })
        #expect(urgent.tokens.withLock { $0 } == ["code-phone"])
        #expect(!bulk.tokens.withLock { $0 }.contains("code-phone"))
        // The blast has not moved meanwhile.
        #expect(queue.snapshot.filter { $0.delivery.userId.hasPrefix("blast") }.allSatisfy { $0.state == .queued })
        gate.open()
        #expect(await eventually { queue.snapshot.allSatisfy { $0.state == .sent } })
        task.cancel()
        await task.value
    }

    @Test("the urgent lane claims and looks up through stores of its own (in the gateway, its own connections); the other lane's never see the code")
    func urgentLaneHasItsOwnStores() async throws {
        let clock = PatientClock()
        let expiry = clock.now().addingTimeInterval(600)
        let bulkQueue = FakeQueue(clock: clock, deliveries: (1...20).map { delivery("blast\($0)", key: 1, position: $0, expiresAt: expiry) })
        let bulkDevices = LookupRecorder(FakeDevices((1...20).map { device(Int64($0), "blast\($0)", "b\($0)") }))
        let urgentQueue = FakeQueue(clock: clock, deliveries: [])
        let urgentDevices = FakeDevices([device(1000, "payer", "code-phone")])
        let bulk = FakeSender(), urgent = FakeSender()
        let wake = QueueWake(urgentPriority: 10)
        var configuration = DeliveryEngine.Configuration()
        configuration.slowPushAfter = .seconds(3600)
        configuration.idlePoll = .seconds(3600)
        let notifications = FakeNotifications(notifications: [1: notification("blast"), 2: notification("code", priority: 10)])
        let running = DeliveryEngine(
            configuration: configuration, owner: "test",
            services: .init(queue: bulkQueue, notifications: notifications, devices: bulkDevices,
                            senders: [PushRoute(platform: .ios): bulk], urgentSenders: [PushRoute(platform: .ios): urgent], wake: wake,
                            clock: clock, random: CountingRandom(),
                            urgentStores: LaneStores(queue: urgentQueue, notifications: notifications, devices: urgentDevices)),
            logger: .silent, metrics: MetricsRegistry())
        let task = Task { await running.run(workers: 1) }
        #expect(await eventually { bulk.tokens.withLock { $0.count } == 20 })
        urgentQueue.add([delivery("payer", key: 2, position: 1, expiresAt: expiry, priority: 10)])
        wake.stored(priority: 10)
        #expect(await eventually { urgent.tokens.withLock { $0 } == ["code-phone"] })
        #expect(urgentQueue.snapshot.first?.attempts == 1, "the code was claimed from the urgent lane's queue")
        #expect(!bulkDevices.seen.withLock { $0 }.contains("payer"), "the other lane's device look-ups saw the code")
        #expect(!bulkQueue.snapshot.contains { $0.delivery.userId == "payer" })
        task.cancel()
        await task.value
    }

    @Test("lanes and their stores: the urgent lane takes its own stores when given, the engine's otherwise; the other lane always the engine's")
    func laneStores() {
        let clock = ManualClock()
        let main = FakeQueue(clock: clock, deliveries: []), urgent = FakeQueue(clock: clock, deliveries: [])
        let notifications = FakeNotifications(notifications: [:])
        func lanes(urgentStores: LaneStores?) -> [String: ObjectIdentifier?] {
            let engine = DeliveryEngine(
                configuration: DeliveryEngine.Configuration(), owner: "test",
                services: .init(queue: main, notifications: notifications, devices: FakeDevices([]), senders: [:],
                                urgentStores: urgentStores),
                logger: .silent, metrics: MetricsRegistry())
            return Dictionary(uniqueKeysWithValues: engine.lanes(workers: 2).map {
                ($0.name, ($0.stores.queue as? FakeQueue).map(ObjectIdentifier.init))
            })
        }
        #expect(lanes(urgentStores: nil) == ["urgent": ObjectIdentifier(main), "bulk": ObjectIdentifier(main)])
        let own = LaneStores(queue: urgent, notifications: notifications, devices: FakeDevices([]))
        #expect(lanes(urgentStores: own) == ["urgent": ObjectIdentifier(urgent), "bulk": ObjectIdentifier(main)])
    }

    @Test("the engine holds no more claimed deliveries than it can have in flight plus one batch")
    func claimedWorkIsBounded() async throws {
        let clock = ManualClock()
        let expiry = clock.now().addingTimeInterval(600)
        let queue = FakeQueue(clock: clock, deliveries: (1...1000).map { delivery("u\($0)", key: 1, position: $0, expiresAt: expiry) })
        let devices = FakeDevices((1...1000).map { device(Int64($0), "u\($0)", "t\($0)") })
        let gate = Gate()
        let sender = FakeSender { _, _ in
            await gate.wait()
            return .accepted(id: nil)
        }
        let running = engine(queue: queue, notifications: [1: notification("n")], devices: devices, clock: clock, senders: [.ios: sender]) {
            $0.batchSize = 50
            $0.maxConcurrentPushes = 20
            $0.urgentPriority = nil
        }
        let task = Task { await running.run(workers: 4) }
        // Two claims fill the allowance (50 + 20 = the window plus a batch); the other two workers wait.
        #expect(await eventually { queue.snapshot.filter { $0.leaseOwner != nil }.count == 70 })
        #expect(await eventually { sender.tokens.withLock { $0.count } == 40 })
        #expect(queue.mostLeased.withLock { $0 } == 70)
        #expect(queue.largestClaim.withLock { $0 } <= 50)
        gate.open()
        #expect(await eventually { queue.snapshot.allSatisfy { $0.state == .sent } })
        #expect(sender.tokens.withLock { $0.count } == 1000)
        task.cancel()
        await task.value
    }

    @Test("a lane that polls claims again only after its poll once a claim drained the queue: a trickle of sends is claimed in batches")
    func drainedQueueWaitsForThePoll() async throws {
        let clock = VirtualClock()
        let start = clock.now()
        let expiry = start.addingTimeInterval(600)
        let queue = FakeQueue(clock: clock, deliveries: (1...3).map { delivery("u\($0)", key: 1, position: $0, expiresAt: expiry) })
        let devices = FakeDevices((1...5).map { device(Int64($0), "u\($0)", "t\($0)") })
        let sender = FakeSender { _, _ in .accepted(id: nil) }
        let running = engine(queue: queue, notifications: [1: notification("n")], devices: devices, clock: clock, senders: [.ios: sender]) {
            $0.batchSize = 50
            $0.idlePoll = .seconds(1)
            $0.urgentPriority = nil
            // Each outcome written at once: no commit wait on the virtual clock.
            $0.commitSize = 1
        }
        let task = Task { await running.run(workers: 1) }
        // One claim took the three (fewer than the 50 asked for), they were pushed, and the loop
        // sleeps until its poll without claiming again at once.
        #expect(await eventually { queue.snapshot.allSatisfy { $0.state == .sent } && clock.nextWake == start.addingTimeInterval(1) })
        #expect(queue.claims.withLock { $0 } == 1)
        // Sends stored meanwhile wait for the poll (the loop is parked: a fact, not a guess) ...
        queue.add((4...5).map { delivery("u\($0)", key: 1, position: $0, expiresAt: expiry) })
        #expect(queue.claims.withLock { $0 } == 1)
        #expect(queue.row("u4")?.state == .queued)
        // ... and are claimed together when it comes.
        clock.advance(by: 1)
        #expect(await eventually { queue.row("u4")?.state == .sent && queue.row("u5")?.state == .sent })
        #expect(queue.claims.withLock { $0 } == 2)
        task.cancel()
        await task.value
        #expect(sender.tokens.withLock { $0.count } == 5)
    }

    @Test("a delivery whose time ran out while its batch was in hand is never pushed; it waits for the expiry sweep, unleased")
    func staleClaimIsNotPushed() async throws {
        let clock = ManualClock()
        let queue = FakeQueue(clock: clock, deliveries: [
            delivery("code", key: 1, position: 1, expiresAt: clock.now().addingTimeInterval(3)),
            delivery("news", key: 2, position: 1, expiresAt: clock.now().addingTimeInterval(600)),
        ])
        // The devices are looked up after the claim: the clock passes the code's time meanwhile.
        let moved = Mutex(false)
        let devices = FakeDevices([device(1, "code", "code-phone"), device(2, "news", "news-phone")]) {
            let first = moved.withLock { moved in
                defer { moved = true }
                return !moved
            }
            if first { clock.advance(by: 5) }
        }
        let sender = FakeSender()
        let running = engine(queue: queue, notifications: [1: notification("code", priority: 10), 2: notification("news")],
                             devices: devices, clock: clock, senders: [.ios: sender]) {
            $0.urgentPriority = nil
        }
        let task = Task { await running.run(workers: 1) }
        #expect(await eventually { queue.row("news")?.state == .sent && queue.row("code")?.leaseOwner == nil && queue.row("code")?.error != nil })
        #expect(sender.tokens.withLock { $0 } == ["news-phone"])
        #expect(queue.row("code")?.state == .queued)
        #expect(queue.row("code")?.error == PushOutcome.expiredReason)
        task.cancel()
        await task.value
    }
}

@Suite("A service spread over several clients", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct SpreadPushSenderTests {
    @Test("a batch is dealt out between the senders; each push is sent once and answered under its own index")
    func dealsOutABatch() async {
        let first = FakeSender { token, _ in .accepted(id: "first-\(token)") }
        let second = FakeSender { token, _ in .accepted(id: "second-\(token)") }
        let spread = SpreadPushSender([first, second])
        // A day to live: a loaded machine must not let the fakes' batch path answer "expired".
        let message = PushMessage(notificationId: "n", text: "t", urgency: .normal, expiresAt: Date().addingTimeInterval(86_400))
        let batch = PushBatch(messages: [message], pushes: (0..<101).map { PushBatch.Push(message: 0, token: "t\($0)") })
        let results = Mutex<[Int: PushOutcome]>([:])
        await spread.send(batch, maxInFlight: 10) { result in results.withLock { $0[result.index] = result.outcome } }
        let answered = results.withLock { $0 }
        #expect(answered.count == 101)
        for index in 0..<101 {
            // Each answer is the one its own token got, from whichever sender it was dealt to.
            let outcome = answered[index]
            #expect(outcome == .accepted(id: "first-t\(index)") || outcome == .accepted(id: "second-t\(index)"))
        }
        #expect(first.tokens.withLock { $0.count } == 51)
        #expect(second.tokens.withLock { $0.count } == 50)
        #expect(Set(first.tokens.withLock { $0 }).isDisjoint(with: second.tokens.withLock { $0 }))
    }

    @Test("never more pushes in flight than the batch allows: one allowed over two senders is one at a time, through one sender")
    func honoursMaxInFlight() async {
        let inFlight = Mutex((now: 0, most: 0))
        let answer: @Sendable (String, Int) async -> PushOutcome = { _, _ in
            inFlight.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            await Task.yield()
            inFlight.withLock { $0.now -= 1 }
            return .accepted(id: nil)
        }
        let first = FakeSender(answer), second = FakeSender(answer)
        let message = PushMessage(notificationId: "n", text: "t", urgency: .normal, expiresAt: Date().addingTimeInterval(86_400))
        let batch = PushBatch(messages: [message], pushes: (0..<20).map { PushBatch.Push(message: 0, token: "t\($0)") })
        await SpreadPushSender([first, second]).send(batch, maxInFlight: 1) { _ in }
        #expect(inFlight.withLock { $0.most } == 1)
        #expect(first.tokens.withLock { $0.count } == 20 && second.tokens.withLock { $0.isEmpty })
    }
}

@Suite("A project's quota with fakes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct QuotaSenderTests {
    func batch(_ count: Int, prefix: String) -> PushBatch {
        let message = PushMessage(notificationId: prefix, text: "t", urgency: .high, expiresAt: Date().addingTimeInterval(3600))
        return PushBatch(messages: [message], pushes: (0..<count).map { PushBatch.Push(message: 0, token: "\(prefix)\($0)") })
    }

    @Test("the limiter holds a blast under the quota while codes pass; the blast goes on as the quota refills")
    func blastHeldCodesPass() async {
        let clock = ManualClock()
        // 600 a minute: 10 tokens held, 1 of them kept for codes.
        let gate = QuotaGate(perMinute: 600, now: clock.now())
        let service = FakeSender()
        let bulk = QuotaSender(service, gate: gate, urgent: false, clock: clock)
        let urgent = QuotaSender(service, gate: gate, urgent: true, clock: clock)
        let blast = Task { await bulk.send(batch(100, prefix: "blast"), maxInFlight: 100) { _ in } }
        #expect(await eventually { service.tokens.withLock { $0.count } == 9 })
        let code = Mutex<PushOutcome?>(nil)
        await urgent.send(batch(1, prefix: "code"), maxInFlight: 1) { result in code.withLock { $0 = result.outcome } }
        #expect(code.withLock { $0 } == .accepted(id: nil))
        #expect(service.tokens.withLock { $0.filter { $0.hasPrefix("blast") }.count } == 9)
        // The clock moves a second: ten more tokens, nine of them for the blast.
        clock.advance(by: 1)
        #expect(await eventually { service.tokens.withLock { $0.filter { $0.hasPrefix("blast") }.count } == 18 })
        blast.cancel()
        await blast.value
        #expect(service.tokens.withLock { $0.filter { $0.hasPrefix("blast") }.count } == 18)
    }

    @Test("a quota answer with Retry-After pauses the project: the rest of the batch is answered throttled, unsent")
    func quotaAnswerPauses() async {
        let clock = ManualClock()
        let gate = QuotaGate(perMinute: 600_000, now: clock.now())
        let service = FakeSender { token, _ in
            token == "t0" ? .retry(reason: "QUOTA_EXCEEDED", after: .seconds(30), cause: .throttled) : .accepted(id: nil)
        }
        let sender = QuotaSender(service, gate: gate, urgent: false, clock: clock)
        _ = await sender.send(PushMessage(notificationId: "n", text: "t", urgency: .normal, expiresAt: clock.now() + 60), to: "t0")
        let outcomes = Mutex<[PushOutcome]>([])
        await sender.send(batch(5, prefix: "later"), maxInFlight: 5) { result in outcomes.withLock { $0.append(result.outcome) } }
        #expect(service.tokens.withLock { $0 } == ["t0"])
        #expect(outcomes.withLock { $0 }.count == 5)
        #expect(outcomes.withLock { $0 }.allSatisfy { $0 == .retry(reason: "QUOTA_EXCEEDED", after: .seconds(30), cause: .throttled) })
        clock.advance(by: 30)
        await sender.send(batch(5, prefix: "after"), maxInFlight: 5) { _ in }
        #expect(service.tokens.withLock { $0.count } == 6)
    }
}

/// A device directory that notes every user it is asked for, then answers from `directory`.
final class LookupRecorder: DeviceDirectory {
    let directory: FakeDevices
    let seen = Mutex<[String]>([])

    init(_ directory: FakeDevices) {
        self.directory = directory
    }

    func devices(users: [String]) async throws -> [String: [Device]] {
        seen.withLock { $0 += users }
        return try await directory.devices(users: users)
    }

    func key(for user: String) -> String { directory.key(for: user) }
    func remove(deviceIds: [Int64]) async throws -> Int { try await directory.remove(deviceIds: deviceIds) }
    func markDelivered(deviceIds: [Int64]) async throws { try await directory.markDelivered(deviceIds: deviceIds) }
}
