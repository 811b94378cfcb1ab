import Foundation
@testable import PigeonCore
import PigeonTestSupport
import Synchronization
import Testing

/// What happened to the parts of a lifecycle, in order.
private final class Journal: Sendable {
    private let entries = Mutex<[String]>([])
    func note(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// A wait that ignores cancellation until the test opens it: a service that will not stop.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

private struct OpenFailed: Error {}

@Suite("Lifecycle: one start, rollback and stop", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct LifecycleTests {
    /// Opens resources "a", "b", "c" noting their quiesce and close.
    private func opened(_ lifecycle: Lifecycle, _ journal: Journal, _ names: [String] = ["a", "b", "c"]) throws {
        for name in names {
            try lifecycle.open(name, { name }, quiesce: { journal.note("quiesce \($0)") },
                               close: { part, closing in journal.note("close \(part)\(closing.abandonRunning ? " abandoning" : "")") })
        }
    }

    @Test("a start that fails part way closes what it opened, latest first, once; the failed part is not recorded")
    func rollBack() async throws {
        let lifecycle = Lifecycle(logger: .silent)
        let journal = Journal()
        try opened(lifecycle, journal, ["pool", "client"])
        #expect(throws: OpenFailed.self) {
            try lifecycle.open("listener", { () throws -> String in throw OpenFailed() }, close: { _, _ in journal.note("close listener") })
        }
        #expect(lifecycle.openResources == ["pool", "client"])
        await lifecycle.rollBack()
        await lifecycle.rollBack()
        #expect(journal.all == ["close client abandoning", "close pool abandoning"])
    }

    @Test("a stop: every resource stops accepting, the services see the graceful stop and finish with their tasks alive, work is handed back, then resources close latest first")
    func stopInPhases() async throws {
        let lifecycle = Lifecycle(logger: .silent)
        let journal = Journal()
        try opened(lifecycle, journal)
        lifecycle.start([
            .init("engine") { stop in
                await stop.wait()
                // Its last writes run in a task that is not cancelled.
                journal.note("engine finished\(Task.isCancelled ? " cancelled" : "")")
            },
        ])
        // The grace is far beyond what the engine needs even on a loaded machine: the stop
        // returns as soon as it finished.
        let finished = await lifecycle.stop(grace: 600) { finished, closing in journal.note("hand back \(finished) \(closing.abandonRunning)") }
        #expect(finished)
        #expect(journal.all == ["quiesce a", "quiesce b", "quiesce c", "engine finished", "hand back true false",
                                "close c", "close b", "close a"])
    }

    @Test("a service that does not finish within the grace is abandoned: the stop still closes everything, telling the resources to abandon what runs")
    func stopAbandons() async throws {
        let lifecycle = Lifecycle(logger: .silent)
        let journal = Journal()
        let gate = Gate()
        try opened(lifecycle, journal, ["pool"])
        lifecycle.start([.init("stuck") { _ in await gate.wait() }])
        let finished = await lifecycle.stop(grace: 0.4) { finished, _ in journal.note("hand back \(finished)") }
        gate.open()
        #expect(!finished)
        #expect(journal.all == ["quiesce pool", "hand back false", "close pool abandoning"])
    }

    @Test("a service that ignores the graceful stop is cancelled when the grace is over, and its return is waited for before the hand-back")
    func hardHalf() async throws {
        let lifecycle = Lifecycle(logger: .silent)
        let journal = Journal()
        lifecycle.start([
            .init("deaf") { _ in
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                journal.note("cancelled")
            },
        ])
        // The reserve is a quarter of the grace: the cancelled service has 0.1 s to return, and
        // a sleep that is cancelled returns at once.
        let finished = await lifecycle.stop(grace: 1.6) { finished, _ in journal.note("hand back \(finished)") }
        #expect(!finished)
        #expect(journal.all == ["cancelled", "hand back false"])
    }

    @Test("a service that returns before the stop is logged as an error, naming it")
    func serviceEndingEarly() async throws {
        let records = InMemoryLogHandler()
        let lifecycle = Lifecycle(logger: Logger(label: "test", handler: records))
        lifecycle.start([.init("sweeps") { _ in }])
        // A condition waited for, bounded generously: in a full run on two cores other tests can
        // hold the cooperative threads for many seconds before the service task runs.
        let deadline = ContinuousClock.now + .seconds(300)
        while records.records.isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let record = try #require(records.records.first)
        #expect(record.level == .error)
        #expect(record.metadata["service"] == "sweeps")
        await lifecycle.stop(grace: 5)
    }
}

/// The graceful half of a stop: a latch apart from cancellation.
@Suite("GracefulStop: a stop that leaves tasks alive", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct GracefulStopTests {
    @Test("a wait in progress ends when the stop is requested; one after it returns at once")
    func waits() async {
        let stop = GracefulStop()
        let waiting = Task {
            await stop.wait()
            return Task.isCancelled
        }
        #expect(!stop.isRequested)
        stop.request()
        #expect(await waiting.value == false, "the waiter was ended by the request, not by cancellation")
        await stop.wait()
        #expect(stop.isRequested && stop.shouldStop)
    }

    @Test("a wait ends when its task is cancelled, the stop not requested")
    func cancelledWait() async {
        let stop = GracefulStop()
        let waiting = Task { await stop.wait() }
        waiting.cancel()
        await waiting.value
        #expect(!stop.isRequested)
    }

    @Test("interrupted work is cancelled by the request and its answer returned; the caller is not cancelled")
    func interrupts() async {
        let stop = GracefulStop()
        let journal = Journal()
        let running = Task {
            let answer = await stop.interrupting { () async -> String in
                journal.note("started")
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                return "cut short"
            }
            return (answer, Task.isCancelled)
        }
        // Requested only once the work runs, so that the request is what cancels it.
        while journal.all.isEmpty { await Task.yield() }
        stop.request()
        let (answer, callerCancelled) = await running.value
        #expect(answer == "cut short")
        #expect(!callerCancelled)
    }

    @Test("work that finishes before any stop gives its answer; work begun after the request sees a cancelled task")
    func finishesOrStartsCancelled() async {
        let stop = GracefulStop()
        #expect(await stop.interrupting { 7 } == 7)
        stop.request()
        #expect(await stop.interrupting { Task.isCancelled })
    }
}

/// Waits for a condition an owner keeps.
@Suite("WaitList: waits resumed by their owner or their cancellation", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct WaitListTests {
    @Test("a condition that holds returns at once; otherwise the wait ends at the owner's resume, not before; a cancelled wait ends on its own")
    func waits() async {
        let waits = WaitList()
        await waits.wait { true }
        let done = Mutex(false)
        let waiting = Task {
            await waits.wait { done.withLock { $0 } }
            return done.withLock { $0 }
        }
        // Resumed while the condition does not hold, a wait returns anyway (its owner changed
        // something); here the owner resumes only after setting it.
        done.withLock { $0 = true }
        waits.resumeAll()
        #expect(await waiting.value)
        let cancelled = Task { await waits.wait { false } }
        cancelled.cancel()
        await cancelled.value
    }
}

/// The lifecycle's bounded wait: a continuation the work and a timer race to resume.
@Suite("BoundedWait: a bounded wait that blocks no thread", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct BoundedWaitTests {
    @Test("work that finishes in time gives its value (the generous bound is never waited out)")
    func finishes() async {
        #expect(await BoundedWait.value(within: .seconds(600)) { 42 } == 42)
    }

    @Test("work still running at the bound gives nil, and is left to finish on its own")
    func runsPastTheBound() async {
        let gate = Gate()
        let finished = Journal()
        let value = await BoundedWait.value(within: .milliseconds(50)) { () async -> Int in
            await gate.wait()
            finished.note("finished")
            return 1
        }
        #expect(value == nil)
        #expect(finished.all.isEmpty, "the work had not finished when the bound answered")
        gate.open()
    }

    @Test("work that throws gives nil at once, not at the bound")
    func throwsGivesNil() async {
        let value = await BoundedWait.value(within: .seconds(600)) { () async throws -> Int in throw OpenFailed() }
        #expect(value == nil)
    }
}

