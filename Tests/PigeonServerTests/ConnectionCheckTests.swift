import Foundation
import PigeonBankStub
import PigeonCore
import PigeonSimulator
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// `pigeon check-config --connect` (the real binary): what a configuration reaches, a line each.
@Suite("check-config --connect", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct ConnectionCheckTests {
    static func check(_ text: String) throws -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("connect") + ".conf")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try ProgramRun.run(GatewayProcess.executable.path, ["check-config", "--config", file.path, "--connect"], errorsToOutput: true)
        return (run.status, String(decoding: run.output, as: UTF8.self))
    }

    @Test("everything reachable: the database (schema current), the bank's WSDL, every push host; exit 0")
    func reachable() async throws {
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let stub = try BankStub(configuration: .init(bankClients: ["bank"]), port: 0, logger: .silent)
        defer { stub.stop() }
        let (status, output) = try Self.check("""
            dbUrl = \(database.url)
            migrationsPath = \(TestDatabase.migrationsDirectory.path)
            sbiOutboundWebServiceURL = \(stub.serviceURL)
            \(fixture.simulator.configurationSnippet)
            """)
        #expect(status == 0, "\(output)")
        #expect(output.contains("database postgresql://") && output.contains(": OK (schema current, migration"), "\(output)")
        #expect(output.contains("bank proxy http://127.0.0.1:") && output.contains("OK (WSDL fetched"), "\(output)")
        #expect(output.contains("APNs 127.0.0.1: OK (resolves to 127.0.0.1") && output.contains("FCM tokens 127.0.0.1: OK"), "\(output)")
        #expect(output.contains("APNs key \(SimulatorCredentials.keyId) production 127.0.0.1: OK (credentials accepted (a push to no device answered BadDeviceToken))"), "\(output)")
        #expect(output.contains("APNs key \(SimulatorCredentials.keyId) sandbox localhost: OK"), "\(output)")
        #expect(!output.contains("FAILED"))
        await database.drop()
    }

    @Test("each app's APNs key tried against each environment: a key restricted to production is OK there and FAILED for sandbox, named (BadEnvironmentKeyIdInToken); exit 1")
    func restrictedKeyNamed() async throws {
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        fixture.simulator.apns.restrictKey(SimulatorCredentials.keyId, to: .init(environment: .production))
        let (status, output) = try Self.check("""
            dbUrl = \(database.url)
            migrationsPath = \(TestDatabase.migrationsDirectory.path)
            \(fixture.simulator.configurationSnippet)
            """)
        #expect(status == 1, "\(output)")
        #expect(output.contains("APNs key \(SimulatorCredentials.keyId) production 127.0.0.1: OK (credentials accepted"), "\(output)")
        #expect(output.contains("APNs key \(SimulatorCredentials.keyId) sandbox localhost: FAILED (BadEnvironmentKeyIdInToken: the key is restricted to the other environment"), "\(output)")
        #expect(fixture.simulator.apns.deliveries.isEmpty, "nothing reached a device")
        await database.drop()
    }

    @Test("check-config without the migrations (a migrationsPath with none, or one that does not exist): exit 1, naming the folder; with them it says how many")
    func migrationsChecked() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("no-migrations"))
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        for folder in [empty.path, empty.path + "/missing"] {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("check") + ".conf")
            try Data("migrationsPath = \(folder)\n".utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try ProgramRun.run(GatewayProcess.executable.path, ["check-config", "--config", file.path], errorsToOutput: true)
            let output = String(decoding: run.output, as: UTF8.self)
            #expect(run.status == 1, "\(output)")
            #expect(output.contains(folder) && !output.contains("configuration OK"), "\(output)")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("check") + ".conf")
        try Data("migrationsPath = \(TestDatabase.migrationsDirectory.path)\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try ProgramRun.run(GatewayProcess.executable.path, ["check-config", "--config", file.path], errorsToOutput: true)
        let output = String(decoding: run.output, as: UTF8.self)
        #expect(run.status == 0 && output.contains("migrations: ") && output.contains("in \(TestDatabase.migrationsDirectory.path)"), "\(output)")
    }

    @Test("check-config reads consoleUsersFile as serve does: a line at fault is exit 1 naming the line; a good file says how many accounts")
    func consoleUsersChecked() throws {
        let users = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("operators"))
        defer { try? FileManager.default.removeItem(at: users) }
        let text = "bankListen = 127.0.0.1:0\nmigrationsPath = \(TestDatabase.migrationsDirectory.path)\nconsoleUsersFile = \(users.path)\n"
        try Data("ana:$2b$05$97UkFRGw4TKiTVDVzmpqMO/I6SUkSa2b.sFfuD8jzqXbSVr/WW/QC:admin\nbob:$1$md5$nope:viewer\n".utf8).write(to: users)
        func check() throws -> (Int32, String) {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("check") + ".conf")
            try Data(text.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try ProgramRun.run(GatewayProcess.executable.path, ["check-config", "--config", file.path], errorsToOutput: true)
            return (run.status, String(decoding: run.output, as: UTF8.self))
        }
        let (bad, refused) = try check()
        #expect(bad == 1 && refused.contains("line 2") && !refused.contains("configuration OK"), "\(refused)")
        try Data("ana:$2b$05$97UkFRGw4TKiTVDVzmpqMO/I6SUkSa2b.sFfuD8jzqXbSVr/WW/QC:admin\n".utf8).write(to: users)
        let (good, said) = try check()
        #expect(good == 0 && said.contains("console: 1 account in \(users.path)"), "\(said)")
    }

    @Test("a stopped PostgreSQL, an unreachable bank, an unresolvable push host: each FAILED with its reason; exit 1")
    func unreachable() async throws {
        let closed = try #require(LoopbackPort.free()), bank = try #require(LoopbackPort.free())
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        // An empty label: the resolver refuses the name without asking any server.
        let snippet = fixture.simulator.configurationSnippet.replacingOccurrences(of: "apnsEndpoint = https://127.0.0.1", with: "apnsEndpoint = https://push-host..invalid")
        let (status, output) = try Self.check("""
            dbUrl = postgresql://postgres@127.0.0.1:\(closed)/pigeon
            migrationsPath = \(TestDatabase.migrationsDirectory.path)
            sbiOutboundWebServiceURL = http://127.0.0.1:\(bank)/sbi-outbound/services/SBIOutbound
            \(snippet)
            """)
        #expect(status == 1, "\(output)")
        #expect(output.contains("database postgresql://postgres@127.0.0.1:\(closed)/pigeon: FAILED ("), "\(output)")
        #expect(output.contains("bank proxy http://127.0.0.1:\(bank)/sbi-outbound/services/SBIOutbound: FAILED ("), "\(output)")
        #expect(output.contains("APNs push-host..invalid: FAILED (the name does not resolve)"), "\(output)")
        #expect(output.contains("APNs sandbox localhost: OK"), "the others are still checked: \(output)")
        #expect(output.contains("APNs key \(SimulatorCredentials.keyId) production push-host..invalid: FAILED"), "\(output)")
    }
}
