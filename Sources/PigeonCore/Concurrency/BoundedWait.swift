import Synchronization

/// Awaits work for a bounded time without holding a thread: the work and a timer race to resume
/// one continuation. The lifecycle's stop, the hand-back of held deliveries, the console's test
/// push and `check-config --connect`'s key probe all wait this way.
package enum BoundedWait {
    /// What `work` returns if it finishes within `limit`; nil when it throws or is still running
    /// then (it goes on unwatched; the timer is cancelled once the work answers).
    package static func value<T: Sendable>(within limit: Duration, _ work: @escaping @Sendable () async throws -> T) async -> T? {
        let race = FirstAnswer<T?>()
        return await withCheckedContinuation { continuation in
            race.start(continuation)
            let timer = Task {
                try? await Task.sleep(for: limit)
                race.answer(nil)
            }
            Task {
                let value = try? await work()
                race.answer(value)
                timer.cancel()
            }
        }
    }

    /// ``value(within:_:)`` with the limit in seconds (none below zero).
    package static func value<T: Sendable>(withinSeconds seconds: Double, _ work: @escaping @Sendable () async throws -> T) async -> T? {
        await value(within: .milliseconds(Int(max(0, seconds) * 1000)), work)
    }
}

/// A continuation resumed by the first of several answers; the later ones are dropped.
private final class FirstAnswer<T: Sendable>: Sendable {
    private let waiting = Mutex<CheckedContinuation<T, Never>?>(nil)

    func start(_ continuation: CheckedContinuation<T, Never>) {
        waiting.withLock { $0 = continuation }
    }

    func answer(_ value: T) {
        waiting.withLock { $0.take() }?.resume(returning: value)
    }
}
