import Synchronization

/// Wakes the claim loops of one lane at once when work arrives for it (a send stored by this
/// process), instead of leaving it to their next poll. A signal with nobody waiting is kept for
/// the next wait, so a send stored between a claim that found nothing and the wait after it is
/// not missed.
package final class WakeSignal: Sendable {
    private struct State {
        var nextId: UInt64 = 0
        /// Registered waits; a continuation once the waiter has suspended.
        var waits: [UInt64: CheckedContinuation<Void, Never>?] = [:]
        var pending = false
    }

    private let state = Mutex(State())

    package init() {}

    /// Ends every wait in progress, or the next one if none is waiting.
    package func signal() {
        let continuations = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.waits.isEmpty else {
                state.pending = true
                return []
            }
            let waiting = state.waits.values.compactMap { $0 }
            state.waits.removeAll()
            return waiting
        }
        continuations.forEach { $0.resume() }
    }

    /// Waits until signalled or until `duration` has passed on `clock` (or the task is cancelled).
    func wait(upTo duration: Duration, clock: any DeliveryClock) async {
        let registered = state.withLock { state -> UInt64? in
            if state.pending {
                state.pending = false
                return nil
            }
            state.nextId += 1
            state.waits[state.nextId] = .some(nil)
            return state.nextId
        }
        guard let id = registered else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.suspend(id) }
            group.addTask { try? await clock.sleep(for: duration) }
            await group.next()
            // Whichever ended first, the other is ended too.
            self.end(id)
            group.cancelAll()
        }
    }

    private func suspend(_ id: UInt64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state -> Bool in
                guard state.waits[id] != nil else { return true }
                state.waits[id] = continuation
                return false
            }
            if ended { continuation.resume() }
        }
    }

    private func end(_ id: UInt64) {
        let continuation = state.withLock { $0.waits.removeValue(forKey: id) }
        continuation??.resume()
    }
}

/// The wake signals of the engine's lanes: a stored send of priority at or above
/// `urgentPriority` wakes the urgent lane's claims at once. Made before the engine, so the
/// SOAP service can be given it.
package final class QueueWake: Sendable {
    package let urgentPriority: Int
    let urgent = WakeSignal()

    package init(urgentPriority: Int) {
        self.urgentPriority = urgentPriority
    }

    /// A send of `priority` was stored: an urgent one wakes the urgent lane.
    package func stored(priority: Int) {
        if priority >= urgentPriority { urgent.signal() }
    }
}
