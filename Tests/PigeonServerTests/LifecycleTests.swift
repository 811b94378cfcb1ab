import Foundation
@testable import PigeonConfiguration
import PigeonCore
import PigeonServer
import PigeonTestSupport
import Testing

/// Starting and stopping: a start that fails leaves nothing running.
@Suite("Gateway lifecycle", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct LifecycleTests {
    /// The process's threads named `name` (Linux: /proc/self/task/*/comm).
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return comm.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    /// Whether the process comes to have `count` threads named `name`: a thread names itself once
    /// running, and is gone from the list a moment after its work ends.
    static func comesToHave(_ count: Int, threadsNamed name: String) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(120)
        while threads(named: name) != count && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        return threads(named: name) == count
    }

    func configuration(port: UInt16, bankPort: Int) -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.http.host = "127.0.0.1"
        configuration.http.port = port
        configuration.database.url = TestDatabase.url
        configuration.database.poolSize = 2
        configuration.database.migrationsPath = TestDatabase.migrationsDirectory.path
        // Nothing listens there: the client is made at start and never called.
        configuration.bankProxyURL = "http://127.0.0.1:\(bankPort)/sbi-outbound/services/SBIOutbound"
        return configuration
    }

    @Test("a start that fails late (its TLS certificate unreadable) stops the bank client it had started: no thread is left")
    func failedStartLeavesNoThread() async throws {
        let bankPort = try #require(LoopbackPort.free())
        let thread = "bank-\(bankPort)"
        // A gateway that starts has the bank client's thread, under that name ...
        let running = try await Gateway.start(configuration: configuration(port: 0, bankPort: bankPort), logger: .silent)
        #expect(await Self.comesToHave(1, threadsNamed: thread))
        // ... and one whose listener cannot start fails, leaving no second one behind.
        await #expect(throws: (any Error).self) {
            var broken = configuration(port: 0, bankPort: bankPort)
            broken.http.tlsCertificatePath = "/nonexistent/server.pem"
            broken.http.tlsKeyPath = "/nonexistent/server.key"
            _ = try await Gateway.start(configuration: broken, logger: .silent)
        }
        #expect(await Self.comesToHave(1, threadsNamed: thread))
        await running.shutdown()
        #expect(await Self.comesToHave(0, threadsNamed: thread))
    }

    @Test("a start that fails at its last step (the bank's address in use) rolls everything back: the public listener's address is free again, no bank client thread is left")
    func failedLastStepRollsBack() async throws {
        let bankPort = try #require(LoopbackPort.free())
        let thread = "bank-\(bankPort)"
        let occupied = try ListenerAddressTests.startBelowEphemeralPorts()
        defer { occupied.stop() }
        // An address below the ephemeral range nobody holds, for the public listener.
        let probe = try ListenerAddressTests.startBelowEphemeralPorts()
        let publicPort = probe.port
        probe.stop()
        var broken = configuration(port: publicPort, bankPort: bankPort)
        broken.http.bankAddress = ("127.0.0.1", occupied.port)
        do {
            _ = try await Gateway.start(configuration: broken, logger: .silent)
            Issue.record("a gateway started with its bank listener on an address in use")
        } catch {
            #expect("\(error)".contains("port \(occupied.port): the address is in use"), "\(error)")
        }
        #expect(await Self.comesToHave(0, threadsNamed: thread))
        // The public listener it had opened is closed: its address binds again at once.
        let rebound = try ListenerAddressTests.start(port: publicPort)
        rebound.stop()
    }

    @Test("SIGHUP (systemctl reload) does not end the gateway: it reads the HTTPS certificate files again, applies a changed logLevel, names the keys that wait for a restart, and keeps everything when server.conf no longer parses")
    func sighupKeepsServing() async throws {
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("sighup"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let certificate = folder.appendingPathComponent("server.crt").path, key = folder.appendingPathComponent("server.key").path
        _ = try await ChildProcess.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                                                      "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        let gateway = try await GatewayProcess.start(configuration: """
            dbUrl = \(database.url)
            dbPoolSize = 2
            migrationsPath = \(TestDatabase.migrationsDirectory.path)
            logLevel = info
            tlsCertificatePath = \(certificate)
            tlsKeyPath = \(key)
            """)
        let original = try String(contentsOf: gateway.configurationFile, encoding: .utf8)
        // logLevel to warning and a key only a restart applies.
        try Data(original.replacingOccurrences(of: "logLevel = info", with: "logLevel = warning").appending("retentionDays = 20\n").utf8)
            .write(to: gateway.configurationFile)
        gateway.signal(SIGHUP)
        for _ in 0..<600 where !gateway.log.contains("log level changed") {
            try await Task.sleep(for: .milliseconds(100))
        }
        var log = gateway.log
        #expect(log.contains("SIGHUP received"), "\(log.suffix(2000))")
        #expect(log.contains("TLS certificate reloaded"), "\(log.suffix(2000))")
        #expect(log.contains("public: reloaded"), "\(log.suffix(2000))")
        #expect(log.contains("log level changed from=info to=warning"), "\(log.suffix(2000))")
        #expect(log.contains("keys=retentionDays"), "\(log.suffix(2000))")
        // At warning, the notices of the next reload are not written; the error below is.
        try Data("logLevel = loud\n".utf8).write(to: gateway.configurationFile)
        gateway.signal(SIGHUP)
        for _ in 0..<600 where !gateway.log.contains("server.conf not re-read") {
            try await Task.sleep(for: .milliseconds(100))
        }
        log = gateway.log
        #expect(log.contains("server.conf not re-read"), "\(log.suffix(2000))")
        #expect(log.components(separatedBy: "TLS certificate reloaded").count - 1 == 1, "\(log.suffix(2000))")
        #expect(gateway.isRunning)
        #expect(LoopbackPort.isAccepting(gateway.port))
        gateway.signal(SIGTERM)
        #expect(await gateway.waitForExit() == 0)
        await database.drop()
    }
}
