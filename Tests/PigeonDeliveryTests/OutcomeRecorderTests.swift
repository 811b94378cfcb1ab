import Foundation
import PigeonCore
import PigeonDomain
import PushCore
import Testing
@testable import PigeonDelivery
import PigeonTestSupport

/// A clock whose waits end only when the test opens its gate.
final class GatedClock: DeliveryClock {
    let gate = Gate()
    func now() -> Date { Date(timeIntervalSince1970: 1_800_000_000) }
    func sleep(for duration: Duration) async throws { await gate.wait() }
}

@Suite("Outcome recorder: group commits", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct OutcomeRecorderTests {
    func finished(_ position: Int, dead: [Int64] = []) -> FinishedDelivery {
        let delivery = ClaimedDelivery(notificationKey: 1, userId: "u\(position)", userFolded: "u\(position)", position: position,
                                       attempt: 1, expiresAt: Date(timeIntervalSince1970: 1_900_000_000))
        return FinishedDelivery(result: DeliveryResult(delivery: delivery, state: .sent), deadDevices: dead, reachedDevices: [Int64(position)])
    }

    @Test("a full group is written at once; a smaller one when the commit interval has passed; dead devices go first")
    func groups() async throws {
        let clock = GatedClock()
        let queue = FakeQueue(clock: ManualClock(), deliveries: [])
        let devices = FakeDevices([])
        let recorder = OutcomeRecorder(owner: "test", queue: queue, devices: devices, clock: clock,
                                       settings: .init(commitSize: 100, commitInterval: .milliseconds(5)), logger: .silent,
                                       metrics: MetricsRegistry())
        for position in 1...250 { recorder.add(finished(position, dead: position == 7 ? [70] : [])) }
        let writer = Task { await recorder.run() }
        // 250 waiting, more than a group: written together without waiting for the interval
        // (the clock's gate is closed).
        #expect(await eventually { queue.writtenGroups.withLock { $0 } == [250] })
        #expect(devices.removed.withLock { $0 } == [70])
        #expect(devices.reached.withLock { $0 }.count == 250)
        // Three more wait for the interval.
        for position in 251...253 { recorder.add(finished(position)) }
        clock.gate.open()
        #expect(await eventually { queue.writtenGroups.withLock { $0 } == [250, 3] })
        writer.cancel()
        await writer.value
        // What arrives after the writer stopped is written by the drain.
        recorder.add(finished(254))
        await recorder.drain()
        #expect(queue.writtenGroups.withLock { $0 } == [250, 3, 1])
    }

    @Test("a write that fails is tried again; one that keeps failing is given up, the rest goes on")
    func failedWrites() async throws {
        let queue = FakeQueue(clock: ManualClock(), deliveries: [])
        queue.failingWrites.withLock { $0 = 4 }
        let recorder = OutcomeRecorder(owner: "test", queue: queue, devices: FakeDevices([]), clock: ManualClock(),
                                       settings: .init(commitSize: 10, writeAttempts: 3), logger: .silent, metrics: MetricsRegistry())
        recorder.add(finished(1))
        await recorder.drain()
        // Three attempts failed: the group is given up (its deliveries stay leased).
        #expect(queue.failedWrites.withLock { $0 } == 3)
        #expect(queue.writtenGroups.withLock { $0 }.isEmpty)
        recorder.add(finished(2))
        await recorder.drain()
        #expect(queue.failedWrites.withLock { $0 } == 4)
        #expect(queue.writtenGroups.withLock { $0 } == [1])
    }

    @Test("outcomes the queue does not take (the lease ended, or the phone acknowledged during the push) are counted, the others written")
    func outcomesNotWritten() async throws {
        let clock = ManualClock()
        let queue = FakeQueue(clock: clock, deliveries: [finished(1).result.delivery, finished(2).result.delivery])
        // Only the first is still leased to this owner when the outcomes arrive.
        #expect(try await queue.claim(owner: "test", limit: 1, lease: .seconds(60), band: .all).map(\.position) == [1])
        let metrics = MetricsRegistry()
        let recorder = OutcomeRecorder(owner: "test", queue: queue, devices: FakeDevices([]), clock: clock,
                                       settings: .init(commitSize: 10), logger: .silent, metrics: metrics)
        recorder.add(finished(1))
        recorder.add(finished(2))
        await recorder.drain()
        #expect(queue.row("u1")?.state == .sent)
        #expect(queue.row("u2")?.state == .queued)
        #expect(metrics.counter(Metric.outcomesNotWrittenTotal) == 1)
    }
}
