import Foundation
import PigeonDomain
import PigeonTestSupport
import PushCore
import Synchronization
import Testing
@testable import PigeonDelivery

/// A push service that takes `capacity` pushes onto its "wire" and holds them until the test opens
/// its gate; every other push waits for a stream as an HTTP/2 client's queue does, and comes back
/// `expired` unsent once its batch's start limit passes on the test's clock.
final class HangingSender: PushSending {
    private let capacity: Int
    private let clock: any DeliveryClock
    private let gate = Gate()
    private let onWire = Mutex(0)
    let tokens = Mutex<[String]>([])

    init(capacity: Int, clock: any DeliveryClock) {
        self.capacity = capacity
        self.clock = clock
    }

    func open() { gate.open() }

    func send(_ message: PushMessage, to token: String) async -> PushOutcome {
        tokens.withLock { $0.append(token) }
        await gate.wait()
        return .accepted(id: nil)
    }

    func send(_ batch: PushBatch, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            for (index, push) in batch.pushes.enumerated() {
                group.addTask { [self] in
                    while true {
                        let started = onWire.withLock { count -> Bool in
                            guard count < capacity else { return false }
                            count += 1
                            return true
                        }
                        if started {
                            onResult(PushBatchResult(index: index, outcome: await send(batch.messages[push.message], to: push.token), duration: nil))
                            return
                        }
                        if let deadline = batch.deadline(of: push), clock.now() >= deadline {
                            onResult(PushBatchResult(index: index, outcome: .expired, duration: nil))
                            return
                        }
                        // A stopping engine starts no push more (as the real client): without
                        // this the wait for a slot spun on a cancelled sleep for ever.
                        if Task.isCancelled {
                            onResult(PushBatchResult(index: index, outcome: .deferred, duration: nil))
                            return
                        }
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                }
            }
        }
    }
}

extension LaneTests {
    func android(_ id: Int64, _ user: String, _ token: String) -> Device {
        Device(id: id, bankClientId: "bank", userId: user, deviceId: "d\(id)", platform: .android, pushToken: token)
    }

    @Test("one service that stops answering leaves another's pushes flowing: its deliveries beyond those in flight go back to the queue, no attempt counted")
    func slowServiceLeavesOthersFlowing() async throws {
        let clock = ManualClock()
        let expiry = clock.now().addingTimeInterval(600)
        let users = (1...400).map { "u\($0)" }
        let queue = FakeQueue(clock: clock, deliveries: users.enumerated().map { delivery($1, key: 1, position: $0 + 1, expiresAt: expiry) })
        // Odd users have an iPhone, even users an Android phone.
        let devices = FakeDevices(users.enumerated().map { index, user in
            index % 2 == 0 ? device(Int64(index), user, "ios-\(user)") : android(Int64(index), user, "android-\(user)")
        })
        let apple = FakeSender()
        let google = HangingSender(capacity: 20, clock: clock)
        let running = engine(queue: queue, notifications: [1: notification("news")], devices: devices, clock: clock,
                             senders: [.ios: apple, .android: google]) {
            $0.batchSize = 50
            $0.maxConcurrentPushes = 20
            $0.slowPushAfter = .seconds(2)
        }
        let task = Task { await running.run(workers: 2) }
        let iPhoneUsers = Set(users.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
        // Android's "wire" is full, and the lane holds all it may (in flight plus a batch, less
        // than the quarter batch a claim waits for), every one of them an Android delivery: the
        // iPhones wait, and nothing moves until the clock does. (Moved while iPhone pushes were
        // in hand, their answers would count as late.)
        #expect(await eventually {
            let leased = queue.snapshot.filter { $0.leaseOwner != nil }
            return leased.count > 70 - 50 / 4 && leased.allSatisfy { !iPhoneUsers.contains($0.delivery.userId) }
        })
        #expect(google.tokens.withLock { $0.count } == 20)
        let sentBefore = apple.tokens.withLock { $0.count }
        #expect(sentBefore < 200)
        // Its pushes have waited past the start limit: the service is slow from now on.
        clock.advance(by: 3)
        #expect(await eventually { queue.snapshot.filter { iPhoneUsers.contains($0.delivery.userId) }.allSatisfy { $0.state == .sent } })
        #expect(apple.tokens.withLock { $0.count } == 200)
        // Android's deliveries are all still queued; those handed back were not counted as an attempt.
        let androidRows = queue.snapshot.filter { !iPhoneUsers.contains($0.delivery.userId) }
        #expect(androidRows.allSatisfy { $0.state == .queued && $0.attempts <= 1 })
        #expect(androidRows.filter { $0.attempts == 1 }.count == 20)
        #expect(google.tokens.withLock { $0.count } == 20)
        #expect(queue.handedBack.withLock { $0 } >= 180)
        google.open()
        task.cancel()
        await task.value
    }

    @Test("a user whose one device's push could not start in time while another's went is SENT, the late device tried again")
    func partlyNotStarted() async throws {
        let clock = ManualClock()
        let expiry = clock.now().addingTimeInterval(600)
        let queue = FakeQueue(clock: clock, deliveries: [delivery("both", key: 1, position: 1, expiresAt: expiry)])
        let devices = FakeDevices([device(1, "both", "ios-both"), android(2, "both", "android-both")])
        let apple = FakeSender()
        // No room on the wire at all: the Android push waits until its start limit.
        let google = HangingSender(capacity: 0, clock: clock)
        let running = engine(queue: queue, notifications: [1: notification("news")], devices: devices, clock: clock,
                             senders: [.ios: apple, .android: google]) { $0.slowPushAfter = .seconds(2) }
        let task = Task { await running.run(workers: 1) }
        #expect(await eventually { apple.tokens.withLock { $0.count } == 1 })
        clock.advance(by: 3)
        #expect(await eventually { queue.row("both")?.state == .sent })
        let row = try #require(queue.row("both"))
        #expect(row.pending == [2])
        #expect(row.error == PushOutcome.notStartedReason)
        #expect(row.dueAt != nil)
        task.cancel()
        await task.value
    }
}
