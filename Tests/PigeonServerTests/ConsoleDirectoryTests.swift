import Foundation
@testable import PigeonConfiguration
@testable import PigeonConsole
import PigeonCore
import PigeonLDAP
import PigeonServer
import PigeonTestSupport
import Testing

/// Operators in the bank's directory (CONTRACT §10) against a real slapd on loopback
/// (``DirectoryFixture``): a bind as the user over ldaps:// and over ldap:// with StartTLS, groups
/// to roles, a locked account, a wrong password, names that could change the DN, a certificate
/// from another CA, a directory that is down — and the console through a gateway.
@Suite("Console sign-in against a real directory", .serialized, .enabled(if: TestTier.runsIntegration, "starts slapd"))
struct ConsoleDirectoryTests {
    static func accounts(_ directory: DirectoryFixture, url: String? = nil, startTLS: Bool = false, caFile: String? = nil,
                         timeoutMilliseconds: Int = 5_000) -> ConsoleDirectoryAccounts {
        ConsoleDirectoryAccounts(
            directory: LDAPDirectory(url: url ?? directory.ldapsURL, caFile: caFile ?? directory.caFile, startTLS: startTLS, timeoutMilliseconds: timeoutMilliseconds),
            userDNTemplate: DirectoryFixture.userDNTemplate,
            groups: [(.viewer, DirectoryFixture.group("pigeon-viewers")), (.support, DirectoryFixture.group("pigeon-support")),
                     (.admin, DirectoryFixture.group("pigeon-admins"))])
    }

    @Test("over ldaps:// and over ldap:// with StartTLS: each person gets their group's role; a wrong password, a locked account, a person in no console group, an unknown name, an empty password and a name with filter or DN syntax are refused")
    func rolesAndRefusals() async throws {
        let directory = try await DirectoryFixture.start()
        defer { directory.stop() }
        for accounts in [Self.accounts(directory), Self.accounts(directory, url: directory.ldapURL, startTLS: true)] {
            let url = accounts.directory.url
            #expect(await accounts.signIn(username: "ada", password: DirectoryFixture.password("ada")) == .accepted(ConsoleOperator(name: "ada", role: .admin)), "\(url)")
            #expect(await accounts.signIn(username: "sam", password: DirectoryFixture.password("sam")) == .accepted(ConsoleOperator(name: "sam", role: .support)))
            #expect(await accounts.signIn(username: "vera", password: DirectoryFixture.password("vera")) == .accepted(ConsoleOperator(name: "vera", role: .viewer)))
            #expect(await accounts.signIn(username: "ada", password: DirectoryFixture.password("sam")) == .refused, "wrong password")
            #expect(await accounts.signIn(username: "lee", password: DirectoryFixture.password("lee")) == .refused, "locked")
            #expect(await accounts.signIn(username: "nora", password: DirectoryFixture.password("nora")) == .refused, "no console group")
            #expect(await accounts.signIn(username: "zed", password: "zed-directory-pw") == .refused, "unknown")
            #expect(await accounts.signIn(username: "ada", password: "") == .refused, "an empty password is never an anonymous bind")
            for name in ["ada,ou=groups", "*", "ada)(uid=*", "ada\\2c", " ada", "ada\u{0}"] {
                #expect(await accounts.signIn(username: name, password: DirectoryFixture.password("ada")) == .refused, "\(name)")
            }
        }
    }

    @Test("a directory whose certificate another CA signed, one that is not listening, and plain ldap:// where StartTLS is required are unavailable — never a wrong password")
    func unavailable() async throws {
        let directory = try await DirectoryFixture.start()
        defer { directory.stop() }
        let otherCA = try await SimulatorFixture.start()
        defer { otherCA.stop() }
        let wrongCA = Self.accounts(directory, caFile: otherCA.simulator.credentials.caFile)
        guard case .unavailable(let reason) = await wrongCA.signIn(username: "ada", password: DirectoryFixture.password("ada")) else {
            Issue.record("a certificate from another CA was accepted")
            return
        }
        #expect(reason.contains(directory.ldapsURL), "\(reason)")
        let closed = LoopbackPort.free() ?? 1
        let down = Self.accounts(directory, url: "ldaps://127.0.0.1:\(closed)", timeoutMilliseconds: 2_000)
        guard case .unavailable = await down.signIn(username: "ada", password: DirectoryFixture.password("ada")) else {
            Issue.record("a directory that is not listening was not reported unavailable")
            return
        }
        directory.stop()
        guard case .unavailable = await Self.accounts(directory).signIn(username: "ada", password: DirectoryFixture.password("ada")) else {
            Issue.record("a stopped directory was not reported unavailable")
            return
        }
    }

    @Test("through a gateway: a directory person signs in to the pages and the JSON API with their role; with the directory down a file account still signs in and a directory person is told the directory does not answer (503), and the trail says so")
    func throughTheGateway() async throws {
        let directory = try await DirectoryFixture.start()
        defer { directory.stop() }
        let usersFile = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-operators-\(UUID().uuidString)").path
        FileManager.default.createFile(atPath: usersFile, contents: Data("local:$2b$05$Dbighfmrx2QO3I4feU.38.dbYV3yOk9LfApIcU66RtqLq1/0EMhPG:admin\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: usersFile) }
        let gateway = try await GatewayHarness {
            $0.http.bankAddress = ("127.0.0.1", 0)
            $0.console.usersFile = usersFile
            $0.console.ldap.url = directory.ldapURL
            $0.console.ldap.userDNTemplate = DirectoryFixture.userDNTemplate
            $0.console.ldap.groups = [("viewer", DirectoryFixture.group("pigeon-viewers")), ("support", DirectoryFixture.group("pigeon-support")),
                                      ("admin", DirectoryFixture.group("pigeon-admins"))]
            $0.console.ldap.caFile = directory.caFile
            $0.console.ldap.timeoutSeconds = 2
        }
        defer { Task { await gateway.gateway.shutdown() } }
        let bank = gateway.bankBaseURL
        let sam = try await ConsoleTests.Operator(base: bank).call("POST", "/console/login", form: ["username": "sam", "password": DirectoryFixture.password("sam")])
        #expect(sam.status == 303, "sam signs in from the directory")
        let cookie = try #require(WalletPassHarness.firstMatch("pigeon_console=([^;]+)", in: sam.headers["set-cookie"] ?? "")?.first)
        #expect(try await ConsoleTests.Operator(base: bank, cookie: cookie).call("GET", "/console").body.contains("Sign out sam (support)"))
        let vera = ["-u", "vera:\(DirectoryFixture.password("vera"))", "-H", "Content-Type: application/json"]
        let refused = try await DeviceFlowHarness.curlWithHeaders(["-s", "-i", "-X", "POST"] + vera + [bank + "/console/api/v1/notifications/any/reveal"], input: nil)
        #expect(refused.status == 403 && refused.body.contains("FORBIDDEN_ROLE"), "\(refused.body)")
        directory.stop()
        let local = try await ConsoleTests.Operator(base: bank).call("POST", "/console/login", form: ["username": "local", "password": "admin-password-2026"])
        #expect(local.status == 303, "a file account signs in while the directory is down")
        let ada = try await ConsoleTests.Operator(base: bank).call("POST", "/console/login", form: ["username": "ada", "password": DirectoryFixture.password("ada")])
        #expect(ada.status == 503 && ada.body.contains("directory does not answer"), "\(ada.status) \(ada.body.prefix(500))")
        let trail = try await DeviceFlowHarness.curlWithHeaders(["-s", "-i", "-u", "local:admin-password-2026", bank + "/console/api/v1/audit"], input: nil)
        #expect(trail.body.contains(#""operator":"ada""#) && trail.body.contains("not checked"), "\(trail.body)")
    }
}
