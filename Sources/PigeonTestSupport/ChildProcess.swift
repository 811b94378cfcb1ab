import Foundation
import PigeonCore
import PigeonSimulator

/// Runs a command line program (openssl, curl) for a test and returns its standard output.
/// The waiting happens on a thread of its own, never on the cooperative pool.
package enum ChildProcess {
    /// Why a program failed.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package static func run(_ executable: String, _ arguments: [String], input: Data? = nil, allowFailure: Bool = false) async throws -> Data {
        try await BlockingWork.run(executable) { try runBlocking(executable, arguments, input: input, allowFailure: allowFailure) }
    }

    /// For synchronous set-up code (test fixtures' initialisers).
    package static func runBlocking(_ executable: String, _ arguments: [String], input: Data? = nil, allowFailure: Bool = false) throws -> Data {
        // A program that exits before reading all its input must not take the tests with it.
        ProcessSignals.ignoreBrokenPipes()
        let outcome = try ProgramRun.run(executable, arguments, input: input)
        guard allowFailure || outcome.status == 0 else {
            throw Failure(description: "\(executable) \(arguments.first ?? "") exited \(outcome.status)")
        }
        return outcome.output
    }
}
