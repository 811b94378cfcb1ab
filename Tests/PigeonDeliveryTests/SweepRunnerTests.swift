import Foundation
import PigeonCore
import PigeonDomain
import PigeonTestSupport
import Testing
@testable import PigeonDelivery

/// The sweep runner on the in-memory sweeps and history (held to PostgreSQL by
/// SweepJobsContractTests), on a clock the test moves: how steps follow one another, when it
/// waits, when the history is kept, what a failure does, how it stops.
@Suite("Sweep runner with fakes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct SweepRunnerTests {
    static func runner(_ sweeps: FakeSweeps, _ history: FakeHistory, clock: VirtualClock) -> SweepRunner {
        SweepRunner(sweeps: sweeps, interval: .seconds(60), deviceExpiry: .seconds(86_400), retention: history, retentionDays: 30,
                    clock: clock, metrics: MetricsRegistry(), logger: .silent)
    }

    @Test("expiry steps follow one another at once while a step leaves work (25,000 deliveries: three steps of at most 10,000), then hygiene, then the runner waits the interval")
    func stepsThenWait() async {
        let clock = VirtualClock()
        let start = clock.now()
        let sweeps = FakeSweeps(clock: clock)
        let history = FakeHistory()
        sweeps.store("blast", recipients: 25_000, expiresAt: start.addingTimeInterval(-1))
        let stop = GracefulStop()
        let running = Task { await Self.runner(sweeps, history, clock: clock).run(until: stop) }
        #expect(await eventually { clock.nextWake == start.addingTimeInterval(60) })
        #expect(sweeps.steps.withLock { $0 } == ["expiry", "expiry", "expiry", "hygiene"])
        #expect(history.passes.withLock { $0 } == ["prepare", "drop"], "the history is kept at the start")
        stop.request()
        await running.value
    }

    @Test("the history is kept once an hour, not at every sweep; the sweeps run at every interval")
    func historyHourly() async {
        let clock = VirtualClock()
        let start = clock.now()
        let sweeps = FakeSweeps(clock: clock)
        let history = FakeHistory()
        let stop = GracefulStop()
        let running = Task { await Self.runner(sweeps, history, clock: clock).run(until: stop) }
        for minute in 1...59 {
            #expect(await eventually { clock.nextWake == start.addingTimeInterval(Double(60 * minute)) })
            clock.advance(by: 60)
        }
        #expect(await eventually { clock.nextWake == start.addingTimeInterval(3600) })
        #expect(history.passes.withLock { $0 } == ["prepare", "drop"], "once in the first hour")
        #expect(sweeps.steps.withLock { $0 }.filter { $0 == "expiry" }.count == 60, "a sweep every minute")
        clock.advance(by: 60)
        #expect(await eventually { history.passes.withLock { $0 }.count == 4 })
        stop.request()
        await running.value
    }

    @Test("a step that fails is tried again at the next interval, not in a loop; the other sweep still runs")
    func failureWaitsTheInterval() async {
        let clock = VirtualClock()
        let start = clock.now()
        let sweeps = FakeSweeps(clock: clock)
        sweeps.store("late", recipients: 2, expiresAt: start.addingTimeInterval(-1))
        sweeps.fail(next: 1)
        let stop = GracefulStop()
        let running = Task { await Self.runner(sweeps, FakeHistory(), clock: clock).run(until: stop) }
        #expect(await eventually { clock.nextWake == start.addingTimeInterval(60) })
        #expect(sweeps.steps.withLock { $0 } == ["expiry", "hygiene"])
        clock.advance(by: 60)
        #expect(await eventually { sweeps.steps.withLock { $0 }.count == 4 && clock.nextWake == start.addingTimeInterval(120) })
        // The send expired at the second sweep: a third finds nothing more to do.
        let step = try? await sweeps.expire(notifications: 100, rows: 10_000)
        #expect(step?.rows == 0)
        stop.request()
        await running.value
    }

    @Test("hygiene waits the period and the reach's precision (a day's period: 48 minutes more): a device kept as reached a day and 40 minutes ago stays, one a day and 50 minutes ago goes")
    func hygieneWaitsThePrecision() async {
        let clock = VirtualClock()
        let start = clock.now()
        let sweeps = FakeSweeps(clock: clock)
        sweeps.device("within", reachedAt: start.addingTimeInterval(-(86_400 + 40 * 60)))
        sweeps.device("past", reachedAt: start.addingTimeInterval(-(86_400 + 50 * 60)))
        let stop = GracefulStop()
        let running = Task { await Self.runner(sweeps, FakeHistory(), clock: clock).run(until: stop) }
        #expect(await eventually { clock.nextWake == start.addingTimeInterval(60) })
        #expect(sweeps.devices == ["within"])
        stop.request()
        await running.value
    }
}
