import Foundation
@testable import PigeonConfiguration
import PigeonDomain
import PigeonCrypto
@testable import PigeonHTTP
@testable import PigeonServer
import PigeonTestSupport
@testable import PigeonWallet
import Testing

/// Passes the gateway signs (CONTRACT §7, optional signing): a test PKI like Apple's — a root, a
/// "WWDR" intermediate, a Pass Type ID certificate under it in a `.p12` — and `openssl smime
/// -verify` as the independent check, against the root, so the signature must carry the WWDR.
@Suite("Pass signing", .enabled(if: TestTier.runsIntegration, "integration tier (processes: openssl): PIGEON_TEST_TIER"))
struct PassSigningTests {
    /// Certificates made once per test in a folder of their own.
    struct TestPKI {
        let folder: URL
        var root: String { folder.appendingPathComponent("root.pem").path }
        var wwdr: String { folder.appendingPathComponent("wwdr.pem").path }
        var p12: String { folder.appendingPathComponent("pass.p12").path }
        static let password = "pass-secret"

        init() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("pki"))
            self.folder = folder
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let path = { (name: String) in folder.appendingPathComponent(name).path }
            try Data("basicConstraints=critical,CA:true\nkeyUsage=critical,keyCertSign,cRLSign\n".utf8).write(to: folder.appendingPathComponent("ca.ext"))
            try Data("basicConstraints=critical,CA:false\nkeyUsage=critical,digitalSignature\n".utf8).write(to: folder.appendingPathComponent("leaf.ext"))
            for arguments in [
                ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("root.key"), "-out", path("root.pem"), "-days", "30",
                 "-subj", "/CN=Test Apple Root CA", "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("wwdr.key"), "-out", path("wwdr.csr"), "-subj", "/CN=Test WWDR/OU=G4"],
                ["x509", "-req", "-in", path("wwdr.csr"), "-CA", path("root.pem"), "-CAkey", path("root.key"), "-CAcreateserial",
                 "-out", path("wwdr.pem"), "-days", "30", "-extfile", path("ca.ext")],
                ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("pass.key"), "-out", path("pass.csr"),
                 "-subj", "/UID=pass.com.example.bank.card/CN=Pass Type ID: pass.com.example.bank.card"],
                ["x509", "-req", "-in", path("pass.csr"), "-CA", path("wwdr.pem"), "-CAkey", path("wwdr.key"), "-CAcreateserial",
                 "-out", path("pass.pem"), "-days", "30", "-extfile", path("leaf.ext")],
                ["pkcs12", "-export", "-in", path("pass.pem"), "-inkey", path("pass.key"), "-out", path("pass.p12"), "-passout", "pass:\(Self.password)"],
            ] {
                _ = try await ChildProcess.run("/usr/bin/openssl", arguments)
            }
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    static let passJson = #"{"formatVersion":1,"passTypeIdentifier":"pass.com.example.bank.card","serialNumber":"card-1","authenticationToken":"wallet-auth-token-0123456789","teamIdentifier":"TEAM000001","webServiceURL":"https://pigeon.example.com/passkit","organizationName":"Bank","description":"Card"}"#
    static let pass = PassIdentity(passTypeIdentifier: "pass.com.example.bank.card", serialNumber: "card-1")

    /// Unpacks `archive` with Python's zipfile into a folder; returns it.
    static func unpack(_ archive: Data) async throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("pkpass"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try archive.write(to: folder.appendingPathComponent("pass.pkpass"))
        _ = try await ChildProcess.run("/usr/bin/python3", ["-c", "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])",
                                                             folder.appendingPathComponent("pass.pkpass").path, folder.appendingPathComponent("x").path])
        return folder.appendingPathComponent("x")
    }

    /// `openssl smime -verify` of `signature` over `manifest.json` against the test root.
    static func verify(_ folder: URL, root: String) async throws -> Bool {
        let output = try await ChildProcess.run("/bin/sh", ["-c", """
            openssl smime -verify -binary -inform DER -in "$1/signature" -content "$1/manifest.json" -CAfile "$2" -purpose any -out /dev/null 2>&1; echo "exit=$?"
            """, "sh", folder.path, root])
        return String(decoding: output, as: UTF8.self).contains("exit=0")
    }

    @Test("a pass built by the gateway: manifest with each file's SHA-1, a signature openssl verifies against the root through the WWDR")
    func signedPassVerifies() async throws {
        let pki = try await TestPKI()
        defer { pki.remove() }
        let signer = try PassSigner(p12: try Data(contentsOf: URL(fileURLWithPath: pki.p12)), password: TestPKI.password,
                                    intermediatesPEM: try String(contentsOfFile: pki.wwdr, encoding: .utf8))
        let icon = Data((0..<3000).map { UInt8($0 % 256) })
        let archive = try PassPackager.package(passJson: Self.passJson, files: [("icon.png", icon), ("en.lproj/pass.strings", Data("\"a\" = \"b\";".utf8))],
                                               for: Self.pass, token: "wallet-auth-token-0123456789", signer: signer)
        #expect(PassArchive.problem(archive) == nil)
        let folder = try await Self.unpack(archive)
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("manifest.json"))) as? [String: String])
        #expect(Set(manifest.keys) == ["pass.json", "icon.png", "en.lproj/pass.strings"])
        let sha1 = String(decoding: try await ChildProcess.run("/usr/bin/sha1sum", [folder.appendingPathComponent("icon.png").path]), as: UTF8.self)
        #expect(sha1.hasPrefix(manifest["icon.png"] ?? "none"))
        #expect(try await Self.verify(folder, root: pki.root))

        // A manifest changed after signing no longer verifies; nor does a signature without the WWDR.
        try Data("{}".utf8).write(to: folder.appendingPathComponent("manifest.json"))
        #expect(try await !Self.verify(folder, root: pki.root))
        let withoutWWDR = try PassSigner(p12: try Data(contentsOf: URL(fileURLWithPath: pki.p12)), password: TestPKI.password)
        let bare = try await Self.unpack(try PassPackager.package(passJson: Self.passJson, files: [], for: Self.pass,
                                                                  token: "wallet-auth-token-0123456789", signer: withoutWWDR))
        defer { try? FileManager.default.removeItem(at: bare.deletingLastPathComponent()) }
        #expect(try await !Self.verify(bare, root: pki.root))
    }

    @Test("a wrong .p12 password, a pass.json naming another pass, and file names leaving the pass are refused")
    func refusals() async throws {
        let pki = try await TestPKI()
        defer { pki.remove() }
        #expect(throws: CryptoError.self) { try PassSigner(p12: try Data(contentsOf: URL(fileURLWithPath: pki.p12)), password: "wrong") }
        let signer = try PassSigner(p12: try Data(contentsOf: URL(fileURLWithPath: pki.p12)), password: TestPKI.password)
        let other = Self.passJson.replacingOccurrences(of: "card-1", with: "card-2")
        #expect(throws: (any Error).self) {
            try PassPackager.package(passJson: other, files: [], for: Self.pass, token: "wallet-auth-token-0123456789", signer: signer)
        }
        for name in ["../x.png", "/etc/passwd", "manifest.json", "a//b.png", "a b.png", ""] {
            #expect(PassPackager.nameProblem(name) != nil, "\(name)")
        }
        #expect(PassPackager.nameProblem("en.lproj/logo@2x.png") == nil)
    }

    @Test("updatePass with passJson and files: the gateway signs, stores and serves a pass that verifies", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
    func endToEnd() async throws {
        let pki = try await TestPKI()
        defer { pki.remove() }
        let wallet = try await WalletPassHarness { configuration in
            configuration.passes.certificates[WalletPassHarness.passType] = .init(path: pki.p12, password: TestPKI.password)
            configuration.passes.wwdrCertificatePath = pki.wwdr
        }
        let icon = Data((0..<2000).map { UInt8($0 % 256) }).base64EncodedString()
        let escapedJson = Self.passJson.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        let reply = try await wallet.gateway.soap("""
            <inb:updatePass><passTypeIdentifier>\(WalletPassHarness.passType)</passTypeIdentifier><serialNumber>card-1</serialNumber>\
            <authenticationToken>\(WalletPassHarness.token)</authenticationToken><passJson>\(escapedJson)</passJson>\
            <files><name>icon.png</name><content>\(icon)</content></files></inb:updatePass>
            """)
        #expect(reply.text.contains("<status>OK</status>"), "\(reply.text)")
        // Registered, the device downloads the signed pass.
        #expect(try await wallet.call("POST", "/v1/devices/d1/registrations/\(WalletPassHarness.passType)/card-1",
                                      body: WalletPassHarness.registration(pushToken: String(repeating: "ab", count: 32)),
                                      headers: WalletPassHarness.applePass()).status == 201)
        let download = try await wallet.call("GET", "/v1/passes/\(WalletPassHarness.passType)/card-1", headers: WalletPassHarness.applePass())
        #expect(download.status == 200)
        let folder = try await Self.unpack(download.bytes)
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        #expect(try await Self.verify(folder, root: pki.root))

        // Both forms at once, or files with a signed pass, are faults.
        let both = try await wallet.gateway.soap("""
            <inb:updatePass><passTypeIdentifier>\(WalletPassHarness.passType)</passTypeIdentifier><serialNumber>card-1</serialNumber>\
            <authenticationToken>\(WalletPassHarness.token)</authenticationToken><pass>\(WalletPassHarness.pkpass(serial: "card-1").base64EncodedString())</pass>\
            <passJson>\(escapedJson)</passJson></inb:updatePass>
            """)
        #expect(both.status == 500 && both.text.contains("not both"))
        #expect(try await wallet.passStatus(serial: "card-1").version == 1)
        await wallet.stop()
    }
}
