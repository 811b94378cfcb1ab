import Foundation

/// `pigeon serve` as a separate process (the debug build next to the package), for tests that
/// kill a gateway with SIGKILL or SIGTERM. Its output goes to a log file kept for diagnosis.
public final class GatewayProcess: @unchecked Sendable {
    // @unchecked: `process` is only started in init and signalled afterwards; Process is
    // thread-safe for those calls.
    public let port: Int
    public let logFile: URL
    /// The server.conf it was started with (a test may rewrite it before a SIGHUP).
    public let configurationFile: URL
    private let process: Process

    /// The debug build of `pigeon` (`swift build --build-tests` makes it).
    public static var executable: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/pigeon")
    }

    /// Why the gateway did not come up.
    public struct StartFailure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts `pigeon serve` with `configuration` (server.conf text without `listen`) on `port`
    /// (a free one when nil) and waits until it accepts connections.
    public init(configuration: String, port fixedPort: Int? = nil) throws {
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
            if LoopbackPort.waitUntilAccepting(candidate, timeout: .seconds(60), stillStarting: { process.isRunning }) {
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

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var isRunning: Bool { process.isRunning }

    /// Sends `signal` (SIGKILL, SIGTERM).
    public func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits (off the cooperative pool) for the process to exit; its status, or nil after `timeout`.
    public func waitForExit(timeout: Duration = .seconds(60)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return process.terminationStatus
    }

    /// The gateway's output so far.
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
