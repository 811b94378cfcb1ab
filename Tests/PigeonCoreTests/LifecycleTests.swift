import Foundation
@testable import PigeonCore
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

@Suite("Lifecycle: one start, rollback and stop")
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

    @Test("a stop: every resource stops accepting, the services are cancelled and finish, work is handed back, then resources close latest first")
    func stopInPhases() async throws {
        let lifecycle = Lifecycle(logger: .silent)
        let journal = Journal()
        try opened(lifecycle, journal)
        lifecycle.start([
            .init("engine") {
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                journal.note("engine finished")
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
        lifecycle.start([.init("stuck") { await gate.wait() }])
        let finished = await lifecycle.stop(grace: 0.4) { finished, _ in journal.note("hand back \(finished)") }
        gate.open()
        #expect(!finished)
        #expect(journal.all == ["quiesce pool", "hand back false", "close pool abandoning"])
    }

    @Test("a service that returns before the stop is logged as an error, naming it")
    func serviceEndingEarly() async throws {
        let records = InMemoryLogHandler()
        let lifecycle = Lifecycle(logger: Logger(label: "test", handler: records))
        lifecycle.start([.init("sweeps") {}])
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

/// The lifecycle's bounded wait: a continuation the work and a timer race to resume.
@Suite("BoundedWait: a bounded wait that blocks no thread")
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

