import Foundation
@testable import PigeonConfiguration
import PigeonCore
import PigeonTestSupport
@testable import PigeonWallet
import Testing

/// The Wallet pieces without a gateway: HTTP dates, the `.pkpass` archive check and writer, and
/// the pass configuration keys.
@Suite("Wallet pass pieces", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PassPiecesTests {
    @Test("HTTP dates are written in IMF-fixdate and read back; other forms are not read")
    func httpDates() {
        let date = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.format(date) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == date)
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 1_798_761_600)) == "Fri, 01 Jan 2027 00:00:00 GMT")
        for other in ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "", "Sun, 06 Nov 1994 25:49:37 GMT",
                      "Sun, 06 Foo 1994 08:49:37 GMT", String(repeating: "x", count: 100)] {
            #expect(HTTPDate.parse(other) == nil, "\(other)")
        }
    }

    @Test("the archive writer makes ZIPs another implementation reads (Python's zipfile, CRCs checked)", .enabled(if: TestTier.runsIntegration, "integration tier (runs python3): PIGEON_TEST_TIER"))
    func zipIsReadable() async throws {
        var zip = ZIPWriter()
        zip.add("pass.json", Data(#"{"serialNumber":"1"}"#.utf8))
        zip.add("en.lproj/pass.strings", Data("\"a\" = \"б\";".utf8))
        zip.add("icon.png", Data((0..<5000).map { UInt8($0 % 251) }))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("zip") + ".pkpass")
        try zip.finish().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let output = String(decoding: try await ChildProcess.run("/usr/bin/python3", ["-c", """
            import sys, zipfile
            z = zipfile.ZipFile(sys.argv[1])
            print(z.testzip() is None, ",".join(z.namelist()), len(z.read("icon.png")))
            """, file.path]), as: UTF8.self)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "True pass.json,en.lproj/pass.strings,icon.png 5000")
    }

    @Test("a .pkpass needs pass.json, manifest.json and signature, and no entry outside the archive")
    func archiveCheck() {
        var good = ZIPWriter()
        for name in ["pass.json", "manifest.json", "signature", "icon.png"] { good.add(name, Data("x".utf8)) }
        #expect(PassArchive.problem(good.finish()) == nil)
        var climbing = ZIPWriter()
        for name in ["pass.json", "manifest.json", "signature", "../etc/passwd"] { climbing.add(name, Data("x".utf8)) }
        #expect(PassArchive.problem(climbing.finish())?.contains("outside the pass") == true)
        #expect(PassArchive.problem(Data(("PK\u{3}\u{4}" + String(repeating: "truncated", count: 5)).utf8))?.contains("central directory") == true)
        #expect(PassArchive.problem(Data(repeating: 0, count: 100))?.contains("not a ZIP") == true)
        let archive = good.finish()
        #expect(PassArchive.problem(archive.prefix(archive.count - 10)) != nil)
    }

    @Test("pass keys: defaults, passType.<id>.certificatePath with dots in the id, and clear errors")
    func configuration() throws {
        let defaults = try GatewayConfiguration.parse(text: "", name: "server.conf")
        #expect(defaults.passes.webServicePath == "/passkit" && defaults.passes.fetchTimeoutSeconds == 600 && defaults.passes.fetchRetries == 3)
        let p12 = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("pass") + ".p12")
        try Data("x".utf8).write(to: p12)
        defer { try? FileManager.default.removeItem(at: p12) }
        let configured = try GatewayConfiguration.parse(text: """
            passWebServicePath = /wallet/v2/
            passFetchTimeoutSeconds = 30
            passFetchRetries = 0
            passType.pass.com.example.bank.card.certificatePath = \(p12.path)
            passType.pass.com.example.bank.card.password = secret
            """, name: "server.conf")
        #expect(configured.passes.webServicePath == "/wallet/v2")
        #expect(configured.passes.fetchTimeoutSeconds == 30 && configured.passes.fetchRetries == 0)
        #expect(configured.passes.certificates["pass.com.example.bank.card"]?.path == p12.path)
        #expect(configured.passes.certificates["pass.com.example.bank.card"]?.password == "secret")
        for (text, fragment) in [
            ("passType.pass.x.keyPath = /a", "unknown key 'keyPath'"),
            ("passType.pass.x.certificatePath = /nonexistent.p12", "cannot read"),
            ("passType.pass.x.password = only", "certificatePath is not"),
            ("passWebServicePath = passkit", "must be a path"),
            ("passWebServicePath = /api/v1", "taken"),
            ("passWebServicePath = /a/../b", "must be a path"),
            ("passFetchRetries = -1", "passFetchRetries"),
        ] {
            #expect(throws: ConfigurationError.self) { try GatewayConfiguration.parse(text: text, name: "server.conf") }
            do {
                _ = try GatewayConfiguration.parse(text: text, name: "server.conf")
            } catch {
                #expect(error.description.contains(fragment), "\(text): \(error.description)")
            }
        }
    }
}
