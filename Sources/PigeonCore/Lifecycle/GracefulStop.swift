import Synchronization

/// The graceful half of a stop, apart from cancellation: once requested, a service claims and
/// starts nothing more and finishes what it holds — writing down what happened, handing back
/// what did not — with its task alive, so those writes need no shield. Cancellation stays the
/// hard half: it comes only after the grace, for what did not finish (ADR 0007).
///
/// A latch: requested once, it stays requested; every wait in progress and every later one
/// returns at once.
package final class GracefulStop: Sendable {
    private struct State {
        var requested = false
        var nextId: UInt64 = 0
        /// What runs when the stop is requested (cancelling interrupted work).
        var observers: [UInt64: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())
    private let waits = WaitList()

    package init() {}

    /// Whether the stop was requested.
    package var isRequested: Bool { state.withLock { $0.requested } }

    /// Whether the caller should stop: the stop was requested, or its task was cancelled (the
    /// hard half, or a caller that stops its own way).
    package var shouldStop: Bool { isRequested || Task.isCancelled }

    /// Requests the stop: every wait ends.
    package func request() {
        let observers = state.withLock { state in
            state.requested = true
            defer { state.observers.removeAll() }
            return Array(state.observers.values)
        }
        waits.resumeAll()
        observers.forEach { $0() }
    }

    /// Returns once the stop is requested, or when the calling task is cancelled.
    package func wait() async {
        await waits.wait { isRequested }
    }

    /// Waits `duration`, or until the stop is requested (or the task is cancelled): the pause
    /// of a periodic service.
    package func sleep(for duration: Duration) async {
        await interrupting { try? await Task.sleep(for: duration) }
    }

    /// Runs `work`, cancelling it when the stop is requested (or the caller is cancelled), and
    /// returns what it returns. For waits (an idle poll, room in a lane) and for work whose
    /// cancellation means "start nothing more" (a batch of pushes: those on the wire finish).
    /// What the caller does after it runs uncancelled.
    package func interrupting<T: Sendable>(_ work: @escaping @Sendable () async -> T) async -> T {
        let task = Task { await work() }
        let id = observe { task.cancel() }
        defer { if let id { forget(id) } }
        return await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Calls `action` when the stop is requested (at once when it already was, returning nil);
    /// the id ends the observation with ``forget(_:)``.
    private func observe(_ action: @escaping @Sendable () -> Void) -> UInt64? {
        let id = state.withLock { state -> UInt64? in
            guard !state.requested else { return nil }
            state.nextId += 1
            state.observers[state.nextId] = action
            return state.nextId
        }
        if id == nil { action() }
        return id
    }

    private func forget(_ id: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }
}
