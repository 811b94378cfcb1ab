import Synchronization

/// Bounds the deliveries one lane holds claimed and not yet written back: at most what it can
/// have in flight plus one batch, so a claimed delivery never waits long in memory (a one-time
/// code claimed behind thousands of others would go out stale) and a crash re-pushes at most that.
/// Claims wait until a useful share of a batch fits, so a busy lane claims whole batches, not
/// one delivery per finished push.
final class ClaimAllowance: Sendable {
    private struct State {
        var held = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    let limit: Int
    private let batchSize: Int
    /// The least room a claim waits for.
    private let threshold: Int
    private let state = Mutex(State())

    init(inFlight: Int, batchSize: Int) {
        self.batchSize = max(1, batchSize)
        limit = max(1, inFlight) + self.batchSize
        threshold = max(1, self.batchSize / 4)
    }

    /// Deliveries held now.
    var held: Int { state.withLock { $0.held } }
    /// Claims waiting for room now.
    var waiters: Int { state.withLock { $0.waiting.count } }

    /// Waits until at least the threshold fits, then reserves up to a batch; returns how many.
    /// Reservations not used by the claim are given back with ``release(_:)``. A cancelled
    /// caller stops waiting and gets 0 (the engine is stopping: it claims nothing more).
    func reserve() async -> Int {
        while true {
            if let reserved = reserveIfRoom() { return reserved }
            if Task.isCancelled { return 0 }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let fits = state.withLock { state -> Bool in
                        // Cancelled before this wait was recorded: the handler found nobody to wake.
                        if limit - state.held >= min(threshold, limit) || Task.isCancelled { return true }
                        state.waiting.append(continuation)
                        return false
                    }
                    if fits { continuation.resume() }
                }
            } onCancel: {
                let waking = state.withLock { state in
                    defer { state.waiting.removeAll() }
                    return state.waiting
                }
                waking.forEach { $0.resume() }
            }
        }
    }

    /// ``reserve()`` without waiting: up to a batch when at least the threshold fits now, else nil.
    func reserveIfRoom() -> Int? {
        state.withLock { state -> Int? in
            let room = limit - state.held
            guard room >= min(threshold, limit) else { return nil }
            let taken = min(batchSize, room)
            state.held += taken
            return taken
        }
    }

    /// `count` deliveries are written back (or were never claimed): their room is free again.
    func release(_ count: Int) {
        guard count > 0 else { return }
        let waking = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.held = max(0, state.held - count)
            guard limit - state.held >= min(threshold, limit) else { return [] }
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        waking.forEach { $0.resume() }
    }
}
