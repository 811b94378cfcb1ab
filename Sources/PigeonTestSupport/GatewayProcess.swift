import Foundation
import PigeonCore

/// `pigeon serve` as a separate process (the debug build next to the package), for tests that
/// kill a gateway with SIGKILL or SIGTERM. Its output goes to a log file kept for diagnosis.
package final class GatewayProcess: @unchecked Sendable {
    // @unchecked: `process` is only started in init and signalled afterwards; Process is
    // thread-safe for those calls.
    package let port: Int
    package let logFile: URL
    /// The server.conf it was started with (a test may rewrite it before a SIGHUP).
    package let configurationFile: URL
    private let process: Process

    /// The debug build of `pigeon` (`swift build --build-tests` makes it).
    package static var executable: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/pigeon")
    }

    /// Why the gateway did not come up.
    package struct StartFailure: Error, CustomStringConvertible {
        package var description: String
    }

    /// ``init(configuration:port:)`` off the cooperative pool: the wait for the gateway to listen
    /// blocks its thread, for seconds on a loaded machine.
    package static func start(configuration: String, port: Int? = nil) async throws -> GatewayProcess {
        try await BlockingWork.run("gateway process") { try GatewayProcess(configuration: configuration, port: port) }
    }

    /// Starts `pigeon serve` with `configuration` (server.conf text without `listen`) on `port`
    /// (a free one when nil) and waits (blocking the calling thread) until it accepts connections.
    package init(configuration: String, port fixedPort: Int? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable.path) else {
            throw StartFailure(description: "\(Self.executable.path) is missing: run swift build --build-tests first")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        logFile = folder.appendingPathComponent("pigeon.log")
        for _ in 0..<(fixedPort == nil ? 5 : 1) {
            guard let candidate = fixedPort ?? LoopbackPort.free() else { continue }
            let configFile = folder.appendingPathComponent("server.conf")
            try Data("listen = 127.0.0.1:\(candidate)\n\(configuration)\n".utf8).write(to: configFile)
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            let process = Process()
            process.executableURL = Self.executable
            process.arguments = ["serve", "--config", configFile.path]
            let log = try FileHandle(forWritingTo: logFile)
            process.standardOutput = log
            process.standardError = log
            try process.run()
            if LoopbackPort.waitUntilListening(candidate, processIdentifier: process.processIdentifier, timeout: .seconds(60),
                                               stillStarting: { process.isRunning }) {
                self.process = process
                self.port = candidate
                self.configurationFile = configFile
                return
            }
            process.terminate()
            process.waitUntilExit()
        }
        throw StartFailure(description: "pigeon serve did not start; log: \((try? String(contentsOf: logFile, encoding: .utf8)) ?? "")")
    }

    package var baseURL: String { "http://127.0.0.1:\(port)" }
    package var isRunning: Bool { process.isRunning }

    /// Sends `signal` (SIGKILL, SIGTERM).
    package func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits (off the cooperative pool) for the process to exit; its status, or nil after `timeout`.
    package func waitForExit(timeout: Duration = .seconds(60)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return process.terminationStatus
    }

    /// The gateway's output so far.
    package var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
