import Foundation
@testable import PigeonConsole
import PigeonCore
import PigeonCrypto
import PigeonLDAP
import PigeonTestSupport
import Testing

/// Where operators' accounts live (CONTRACT §10), held to one rule set: the users file, the
/// single account of a small deployment (unit tier) and the bank's directory over LDAP
/// (integration tier, a real slapd). Each holds `ada`, with her password, as an admin.
@Suite("Console accounts contract: the users file, the single account and the directory sign in alike", .serialized, .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConsoleAccountsContractTests {
    enum Kind: String, CustomStringConvertible, CaseIterable {
        case file, single, directory
        var description: String { rawValue }
        static var available: [Kind] { TestTier.runsIntegration ? [.file, .single, .directory] : [.file, .single] }
    }

    /// A source holding `ada` with `password`, and how to stop it.
    struct Accounts {
        var source: any ConsoleAccountSource
        var password: String
        var finish: @Sendable () -> Void
    }

    static func make(_ kind: Kind) async throws -> Accounts {
        switch kind {
        case .file:
            let password = "ada:file pw"
            let hash = try #require(PasswordHash.make(password))
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-accounts-\(UUID().uuidString)").path
            FileManager.default.createFile(atPath: path, contents: Data("ada:\(hash):admin\n".utf8))
            defer { try? FileManager.default.removeItem(atPath: path) }
            return Accounts(source: try ConsoleUsersFile(path: path), password: password, finish: {})
        case .single:
            let password = "ada:single pw"
            return Accounts(source: ConsoleSingleAccount(username: "ada", password: password), password: password, finish: {})
        case .directory:
            let directory = try await DirectoryFixture.start()
            let accounts = ConsoleDirectoryAccounts(
                directory: LDAPDirectory(url: directory.ldapsURL, caFile: directory.caFile, startTLS: false, timeoutMilliseconds: 5_000),
                userDNTemplate: DirectoryFixture.userDNTemplate,
                groups: [(.viewer, DirectoryFixture.group("pigeon-viewers")), (.support, DirectoryFixture.group("pigeon-support")),
                         (.admin, DirectoryFixture.group("pigeon-admins"))])
            return Accounts(source: accounts, password: DirectoryFixture.password("ada"), finish: { directory.stop() })
        }
    }

    @Test("the right password signs ada in as the admin she is; a wrong, a longer or an empty one is refused, as is an unknown name",
          arguments: Kind.available)
    func passwords(kind: Kind) async throws {
        let accounts = try await Self.make(kind)
        defer { accounts.finish() }
        #expect(await accounts.source.signIn(username: "ada", password: accounts.password) == .accepted(ConsoleOperator(name: "ada", role: .admin)))
        #expect(await accounts.source.signIn(username: "ada", password: accounts.password + "x") == .refused)
        #expect(await accounts.source.signIn(username: "ada", password: String(accounts.password.dropLast())) == .refused)
        #expect(await accounts.source.signIn(username: "ada", password: "") == .refused)
        #expect(await accounts.source.signIn(username: "zed", password: accounts.password) == .refused)
    }

    @Test("a name is ada's only as she spells it: the name with part of her password moved into it, with syntax or spaces around it, or with a NUL, is refused",
          arguments: Kind.available)
    func names(kind: Kind) async throws {
        let accounts = try await Self.make(kind)
        defer { accounts.finish() }
        // "ada:x" with the rest of the password: the same bytes as "ada" + ":" + the password.
        let (head, rest) = (accounts.password.prefix(3), accounts.password.dropFirst(3))
        #expect(await accounts.source.signIn(username: "ada:\(head)", password: String(rest.dropFirst())) == .refused,
                "a colon moved from the password into the name")
        for name in ["ada ", " ada", "ada\u{0}", "ada,ou=people", "*"] {
            #expect(await accounts.source.signIn(username: name, password: accounts.password) == .refused, "\(name.debugDescription)")
        }
    }
}
