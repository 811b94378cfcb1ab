import Synchronization

/// The handlers of a listener still running, and the waits for none to be: a stop awaits the
/// requests in progress instead of polling a count.
final class HandlersInFlight: Sendable {
    private struct State {
        var running = 0
        var nextId: UInt64 = 0
        /// Waits for no handler to be running; a continuation once the waiter has suspended.
        var idleWaits: [UInt64: CheckedContinuation<Void, Never>?] = [:]
    }

    private let state = Mutex(State())

    /// Handlers running now.
    var count: Int { state.withLock { $0.running } }

    /// A handler started.
    func begin() {
        state.withLock { $0.running += 1 }
    }

    /// A handler answered; the last one ends the waits for idleness.
    func end() {
        let waking = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.running -= 1
            guard state.running == 0 else { return [] }
            defer { state.idleWaits.removeAll() }
            return state.idleWaits.values.compactMap { $0 }
        }
        waking.forEach { $0.resume() }
    }

    /// Returns once no handler is running, or when the calling task is cancelled.
    func idle() async {
        let registered = state.withLock { state -> UInt64? in
            guard state.running > 0 else { return nil }
            state.nextId += 1
            state.idleWaits[state.nextId] = .some(nil)
            return state.nextId
        }
        guard let id = registered else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ended = state.withLock { state -> Bool in
                    guard state.idleWaits[id] != nil, !Task.isCancelled else {
                        state.idleWaits[id] = nil
                        return true
                    }
                    state.idleWaits[id] = continuation
                    return false
                }
                if ended { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { $0.idleWaits.removeValue(forKey: id) }
            continuation??.resume()
        }
    }
}
