import Foundation

/// Runs blocking work (joining threads, waiting for a C library to stop, a child process) on a
/// thread of its own, so no thread of the Swift cooperative pool — of which there are only as
/// many as cores — ever waits on it.
package enum BlockingWork {
    package static func run<T: Sendable>(_ name: String, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try work() })
            }
            thread.name = name
            thread.start()
        }
    }

    package static func run<T: Sendable>(_ name: String, _ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: work())
            }
            thread.name = name
            thread.start()
        }
    }
}
