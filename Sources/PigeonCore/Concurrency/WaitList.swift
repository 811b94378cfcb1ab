import Synchronization

/// Tasks waiting for a condition their owner keeps, each resumed once: by ``resumeAll()`` (the
/// owner changed the condition), or by its own cancellation. A wait registers before it reads
/// the condition, and the owner resumes after it changed it, so no change is missed between the
/// two. ``GracefulStop`` waits for its request this way, a listener's stop for its handlers.
package final class WaitList: Sendable {
    private struct State {
        var nextId: UInt64 = 0
        /// Registered waits; a continuation once the waiter has suspended.
        var waits: [UInt64: CheckedContinuation<Void, Never>?] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    /// Returns at once when `satisfied()` holds (read once, after the wait registered), else at
    /// the next ``resumeAll()`` — the owner's signal that it changed what `satisfied` reads — or
    /// when the calling task is cancelled.
    package func wait(until satisfied: () -> Bool) async {
        let id = state.withLock { state -> UInt64 in
            state.nextId += 1
            state.waits[state.nextId] = .some(nil)
            return state.nextId
        }
        guard !satisfied() else {
            end(id)
            return
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ended = state.withLock { state -> Bool in
                    // Resumed, or cancelled, before this wait suspended.
                    guard state.waits[id] != nil, !Task.isCancelled else {
                        state.waits[id] = nil
                        return true
                    }
                    state.waits[id] = continuation
                    return false
                }
                if ended { continuation.resume() }
            }
        } onCancel: {
            end(id)
        }
    }

    /// Resumes every wait in progress; called after each change that may satisfy them.
    package func resumeAll() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waits.removeAll() }
            return state.waits.values.compactMap { $0 }
        }
        waiting.forEach { $0.resume() }
    }

    private func end(_ id: UInt64) {
        let continuation = state.withLock { $0.waits.removeValue(forKey: id) }
        continuation??.resume()
    }
}
