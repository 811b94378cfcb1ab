import Synchronization

/// Carries results from the threads that produce them (an HTTP/2 client's driving thread) to
/// one consuming task. Unlike `AsyncStream`, it ignores the consumer's cancellation: a stopping
/// engine still takes every result of the pushes it sent. The consumer takes whatever has
/// arrived at once, so a burst of results costs one wake-up.
final class ResultChannel<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [Element] = []
        var finished = false
        var waiter: CheckedContinuation<[Element]?, Never>?
    }

    private let state = Mutex(State())

    init() {}

    /// Adds a result; wakes the consumer if it is waiting.
    func yield(_ element: Element) {
        let waiter = state.withLock { state -> CheckedContinuation<[Element]?, Never>? in
            guard let waiter = state.waiter else {
                state.buffer.append(element)
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: [element])
    }

    /// No more results will come; the consumer gets `nil` once it has taken the rest.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<[Element]?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Everything that arrived since the last call, waiting for at least one; `nil` when the
    /// channel is finished and empty. One consumer only.
    func next() async -> [Element]? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> [Element]?? in
                if !state.buffer.isEmpty {
                    defer { state.buffer = [] }
                    return .some(state.buffer)
                }
                if state.finished { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
