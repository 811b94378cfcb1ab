import Foundation
@testable import PigeonConfiguration
@testable import PigeonConsole
import PigeonCore
import PigeonCrypto
import PigeonServer
import PigeonStore
import PigeonTestSupport
import Testing

/// Operators as persons across a fleet (CONTRACT §10): two gateways on one database behind one
/// address — an operator signs in on one and acts on the other; after a restart the session and
/// the audit trail are still there; `pigeon outbox retry` is recorded with who ran it; SIGHUP
/// re-reads the users file.
@Suite("Console across gateways", .serialized, .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct ConsoleFleetTests {
    static let operators = """
        vera:$2b$05$cI/kD5ULD0e920EIT5BDyebKXuKNVD0ZvI.IlGiE2uPXlYZQQV8Zi:viewer
        sam:$2b$05$MPNsqnWsQpwyQIgMWMNhieZ7/Ac6UftF71B5YTN2T4YiSNgZ4qkfW:support

        """

    static func gateway(database: String, usersFile: String) async throws -> GatewayHarness {
        try await GatewayHarness {
            $0.database.url = database
            $0.http.bankAddress = ("127.0.0.1", 0)
            $0.console.usersFile = usersFile
        }
    }

    @Test("sign in on one gateway, read and act on the other with the same cookie and CSRF token; restart both: still signed in, the trail lists who did what with the reason, the revealed text is not in it; a SIGHUP re-reads the users file")
    func signInOnOneActOnTheOther() async throws {
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        let usersFile = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-operators-\(UUID().uuidString)").path
        FileManager.default.createFile(atPath: usersFile, contents: Data(Self.operators.utf8))
        defer { try? FileManager.default.removeItem(atPath: usersFile) }
        var first: GatewayHarness? = try await Self.gateway(database: database.url, usersFile: usersFile)
        var second: GatewayHarness? = try await Self.gateway(database: database.url, usersFile: usersFile)
        let sent = try await first!.soap("""
            <inb:sendNotification><notification><id>hello+1 x</id><pushContent><text>Balance 1234567 RUB</text><type>UNIVERSAL</type></pushContent>\
            <recipients>alice</recipients><timeout>600</timeout></notification></inb:sendNotification>
            """)
        #expect(sent.text.contains("<status>OK</status>"), "\(sent.text)")

        let signIn = try await ConsoleTests.Operator(base: first!.bankBaseURL).call("POST", "/console/login", form: ["username": "sam", "password": "support-password-2026"])
        #expect(signIn.status == 303)
        let cookie = try #require(WalletPassHarness.firstMatch("pigeon_console=([^;]+)", in: signIn.headers["set-cookie"] ?? "")?.first)
        let onSecond = ConsoleTests.Operator(base: second!.bankBaseURL, cookie: cookie)
        let page = try await onSecond.call("GET", "/console/notification?id=hello%2B1+x")
        #expect(page.status == 200 && page.body.contains("Sign out sam (support)") && page.body.contains("Balance •••••••"), "\(page.body.prefix(2000))")
        let csrf = try #require(ConsoleTests.Operator.csrf(page.body))
        let revealed = try await onSecond.call("POST", "/console/notification/reveal", form: ["csrf": csrf, "id": "hello+1 x"])
        #expect(revealed.status == 200 && revealed.body.contains("Balance 1234567 RUB"), "acted on the other gateway")
        let refused = try await onSecond.call("GET", "/console/config")
        #expect(refused.status == 403, "support does not see the configuration")

        // Both gateways restart (a rolling restart would keep one up; this is the harder case).
        await first!.gateway.shutdown()
        await second!.gateway.shutdown()
        first = nil
        second = nil
        let third = try await Self.gateway(database: database.url, usersFile: usersFile)
        let again = ConsoleTests.Operator(base: third.bankBaseURL, cookie: cookie)
        #expect(try await again.call("GET", "/console").status == 200, "still signed in after the restart")
        let audit = try await again.call("GET", "/console/api/v1/audit")
        #expect(audit.status == 200 && !audit.body.contains("1234567"), "\(audit.body)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(audit.body.utf8)) as? [String: Any])["entries"] as? [[String: Any]]
        #expect(entries?.map { $0["action"] as? String } == ["reveal", "sign-in"], "\(audit.body)")
        #expect(entries?.first?["operator"] as? String == "sam" && entries?.first?["target"] as? String == "hello+1 x" && entries?.first?["address"] as? String == "127.0.0.1")

        // SIGHUP: vera's role changes to admin in the file; a new sign-in gets it.
        FileManager.default.createFile(atPath: usersFile, contents: Data(Self.operators.replacingOccurrences(of: ":viewer", with: ":admin").utf8))
        let reload = third.gateway.reload(rereading: .success(third.gateway.configuration))
        #expect((try? reload.consoleUsers?.get()) == 2)
        let vera = try await ConsoleTests.Operator(base: third.bankBaseURL).call("POST", "/console/login", form: ["username": "vera", "password": "viewer-password-2026"])
        let veraCookie = try #require(WalletPassHarness.firstMatch("pigeon_console=([^;]+)", in: vera.headers["set-cookie"] ?? "")?.first)
        #expect(try await ConsoleTests.Operator(base: third.bankBaseURL, cookie: veraCookie).call("GET", "/console/config").status == 200)
        await third.gateway.shutdown()
        await database.drop()
    }
}
