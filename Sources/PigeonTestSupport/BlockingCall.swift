import Foundation

/// Blocking work in an async test (a libpq call that waits on a lock, a child process).
package enum BlockingCall {
    /// Runs `body` on a thread of its own and awaits its result. A test must not block a thread
    /// of Swift's cooperative pool: the pool has one thread per core, so two tests each blocking
    /// one can starve every other task — the very ones that would release what they wait for.
    package static func onOwnThread<T: Sendable>(
        _ name: String = "pigeon-test-blocking",
        _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try body() })
            }
            thread.name = name
            thread.start()
        }
    }
}
