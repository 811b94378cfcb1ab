import Foundation
import PigeonCore
import PigeonSimulator

/// A `pigeon simulate` for one test: fresh credentials in a temporary folder, a free port found
/// by trying random ones (the credentials name the port, so port 0 cannot be used), and
/// `stop()` that removes everything.
package final class SimulatorFixture: Sendable {
    package let simulator: Simulator
    private let folder: URL

    /// Makes one off the cooperative pool: its credentials come from several `openssl` runs, which
    /// on a loaded machine take seconds, and a parallel run's tests make dozens of these at once
    /// (run on the pool's two threads, they held every other test's task for over a minute).
    package static func start(enforceRapidResetLimit: Bool = false, clock: @escaping @Sendable () -> Date = Date.init) async throws -> SimulatorFixture {
        try await BlockingWork.run("simulator fixture") { try SimulatorFixture(enforceRapidResetLimit: enforceRapidResetLimit, clock: clock) }
    }

    /// Blocks the calling thread while `openssl` makes the credentials: from async code, use ``start(enforceRapidResetLimit:clock:)``.
    package init(enforceRapidResetLimit: Bool = false, clock: @escaping @Sendable () -> Date = Date.init) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("simulator-\(UUID().uuidString)")
        var lastError: (any Error)?
        for _ in 0..<10 {
            let port = UInt16.random(in: 40_000...60_000)
            do {
                // Credentials name the token endpoint's port: make them afresh for each try.
                try? FileManager.default.removeItem(at: folder)
                simulator = try Simulator(folder: folder, port: port, enforceRapidResetLimit: enforceRapidResetLimit, clock: clock)
                return
            } catch let error as H2Server.StartError {
                lastError = error
            }
        }
        throw lastError ?? CocoaError(.featureUnsupported)
    }

    package func stop() {
        simulator.stop()
        try? FileManager.default.removeItem(at: folder)
    }
}
