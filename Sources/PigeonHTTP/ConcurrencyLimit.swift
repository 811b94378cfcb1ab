import Synchronization

/// At most `limit` holders at once; the rest wait in arrival order. A listener's handlers take a
/// place each, so a flood on one listener queues in its own line (connections suspended, a few
/// hundred bytes each) instead of in front of the database for everyone.
package final class ConcurrencyLimit: Sendable {
    private struct State {
        var available: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state: Mutex<State>

    package init(_ limit: Int) {
        state = Mutex(State(available: max(1, limit)))
    }

    /// Waits for a place.
    package func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Takes a place if one is free now; never waits.
    package func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
    }

    /// Gives a place back, to the longest waiter if there is one.
    package func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.head < state.waiting.count else {
                state.available += 1
                return nil
            }
            let next = state.waiting[state.head]
            state.head += 1
            if state.head == state.waiting.count || state.head >= 1024 {
                state.waiting.removeFirst(state.head)
                state.head = 0
            }
            return next
        }
        next?.resume()
    }
}
