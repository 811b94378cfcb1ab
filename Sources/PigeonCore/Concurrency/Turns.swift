import Synchronization

/// Lets tasks run a piece of work one at a time, in the order they asked: an asynchronous lock
/// that suspends a waiting task instead of blocking its thread. A reference, so that copies of
/// the value holding it share the turns.
///
/// Taken before a pooled database connection, never inside one: a task waiting for its turn then
/// holds nothing another caller needs.
package final class Turns: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    package init() {}

    /// Runs `body` once no other caller's `body` runs.
    package func take<T>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Hands the turn to the longest waiter, or frees it.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
