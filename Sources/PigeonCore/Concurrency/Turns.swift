import Synchronization

/// Lets callers on different threads run a piece of blocking work one at a time, in turns: a
/// reference, so that copies of the value holding it share the turns.
public final class Turns: Sendable {
    private let lock = Mutex(())

    public init() {}

    /// Runs `body` once no other caller's `body` runs.
    public func take<T>(_ body: () throws -> T) rethrows -> T {
        try lock.withLock { _ in try body() }
    }
}
