import Synchronization

/// Carries results from the threads that produce them (an HTTP/2 client's driving thread) to
/// one consuming task. Unlike `AsyncStream`, it ignores the consumer's cancellation: a stopping
/// engine still takes every result of the pushes it sent. The consumer takes whatever has
/// arrived at once, so a burst of results costs one wake-up; a producer that knows its groups
/// adds quietly and flushes once a group.
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

    /// Adds a result without waking the consumer: ``flush()`` (or ``finish()``) does, once for
    /// every result added this way since. For a producer that gives results in groups (an
    /// HTTP/2 client's round): one wake-up a group, not one a result.
    func yieldQuietly(_ element: Element) {
        state.withLock { $0.buffer.append(element) }
    }

    /// Wakes the consumer, if it is waiting, with what was added quietly.
    func flush() {
        let woken = state.withLock { state -> (CheckedContinuation<[Element]?, Never>, [Element])? in
            guard let waiter = state.waiter, !state.buffer.isEmpty else { return nil }
            state.waiter = nil
            defer { state.buffer = [] }
            return (waiter, state.buffer)
        }
        if let (waiter, elements) = woken { waiter.resume(returning: elements) }
    }

    /// No more results will come; the consumer gets `nil` once it has taken the rest (results
    /// added quietly and not flushed included).
    func finish() {
        let woken = state.withLock { state -> (CheckedContinuation<[Element]?, Never>, [Element]?)? in
            state.finished = true
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            guard !state.buffer.isEmpty else { return (waiter, nil) }
            defer { state.buffer = [] }
            return (waiter, state.buffer)
        }
        if let (waiter, elements) = woken { waiter.resume(returning: elements) }
    }

    /// Whether the consumer is waiting in ``next()``, and how many results wait for it (tests).
    var waiting: (consumer: Bool, results: Int) {
        state.withLock { ($0.waiter != nil, $0.buffer.count) }
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
