/// Runs work that must finish even when the calling task is being cancelled: writing down what
/// already happened (outcomes of pushes sent, reports the bank took). The database pool refuses
/// work for a cancelled caller, so such writes run in a task of their own, which does not inherit
/// the caller's cancellation.
package enum CancellationShield {
    package static func run<T: Sendable>(_ work: @escaping @Sendable () async -> T) async -> T {
        await Task { await work() }.value
    }

    /// ``run(_:)`` for work that throws; its error reaches the caller.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await Task { try await work() }.value
    }
}
