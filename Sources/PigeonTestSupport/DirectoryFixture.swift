import Foundation
import PigeonCore

/// A real OpenLDAP directory (Debian's `slapd`) on loopback for the console's LDAP sign-in
/// tests: `ldap://` (StartTLS offered) and `ldaps://` with a certificate from a CA of its own,
/// the password policy overlay (a locked account cannot bind), and a small bank directory
/// (`tests/directory/`, shared with `start_directory` in scripts/lib/common.sh):
///
/// - `ada` in `pigeon-admins`, `sam` in `pigeon-support`, `vera` in `pigeon-viewers`;
/// - `lee` in `pigeon-admins` but locked (`pwdAccountLockedTime`);
/// - `nora` in no console group.
///
/// Each person's password is `<name>-directory-pw`. Stop it with ``stop()``.
package final class DirectoryFixture: @unchecked Sendable {
    package static let base = "dc=bank,dc=example"
    package static let userDNTemplate = "uid={user},ou=people,\(base)"
    package static func group(_ name: String) -> String { "cn=\(name),ou=groups,\(base)" }
    /// `consoleLdapGroups` for this directory.
    package static let groupsSetting = "viewer=\(group("pigeon-viewers"));support=\(group("pigeon-support"));admin=\(group("pigeon-admins"))"
    package static func password(_ name: String) -> String { "\(name)-directory-pw" }

    package let folder: URL
    package let ldapPort: Int
    package let ldapsPort: Int
    package var ldapURL: String { "ldap://127.0.0.1:\(ldapPort)" }
    package var ldapsURL: String { "ldaps://127.0.0.1:\(ldapsPort)" }
    /// The CA that signed the directory's certificate.
    package var caFile: String { folder.appendingPathComponent("ca.pem").path }
    private let process: Process

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// ``init()`` off the cooperative pool: it runs `slapadd` and `openssl` and waits for `slapd`.
    package static func start() async throws -> DirectoryFixture {
        try await BlockingWork.run("directory fixture") { try DirectoryFixture() }
    }

    package init() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/slapd") else {
            throw Failure(description: "slapd is not installed (apt-get install slapd ldap-utils; scripts/test.sh installs it)")
        }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-slapd-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("data"), withIntermediateDirectories: true)
        try Self.makeCertificates(in: folder)
        try Data(try Self.configuration(folder: folder.path).utf8).write(to: folder.appendingPathComponent("slapd.conf"))
        var seed = try Self.seed()
        for name in ["ada", "sam", "vera", "lee", "nora"] {
            let hashed = String(decoding: try ChildProcess.runBlocking("/usr/sbin/slappasswd", ["-s", Self.password(name)]), as: UTF8.self)
            seed = seed.replacingOccurrences(of: "@PASSWORD:\(name)@", with: hashed.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        try Data(seed.utf8).write(to: folder.appendingPathComponent("seed.ldif"))
        _ = try ChildProcess.runBlocking("/usr/sbin/slapadd", ["-q", "-f", folder.appendingPathComponent("slapd.conf").path,
                                                               "-l", folder.appendingPathComponent("seed.ldif").path])
        var lastError = "no free port"
        for _ in 0..<5 {
            guard let plain = LoopbackPort.free(), let secure = LoopbackPort.free(), plain != secure else { continue }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/slapd")
            // -d 0: stay in the foreground (a child this process can stop), logging nothing.
            process.arguments = ["-d", "0", "-f", folder.appendingPathComponent("slapd.conf").path,
                                 "-h", "ldap://127.0.0.1:\(plain)/ ldaps://127.0.0.1:\(secure)/"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline, process.isRunning, !(LoopbackPort.isAccepting(plain) && LoopbackPort.isAccepting(secure)) {
                Thread.sleep(forTimeInterval: 0.05)
            }
            if process.isRunning, LoopbackPort.isAccepting(plain), LoopbackPort.isAccepting(secure) {
                self.process = process
                ldapPort = plain
                ldapsPort = secure
                return
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            lastError = "slapd did not start on ports \(plain) and \(secure)"
        }
        try? FileManager.default.removeItem(at: folder)
        throw Failure(description: lastError)
    }

    /// Stops slapd (SIGKILL: a child of the test process inherits its blocked SIGTERM) and
    /// removes its files.
    package func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }

    private static func makeCertificates(in folder: URL) throws {
        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }
        let openssl = "/usr/bin/openssl"
        _ = try ChildProcess.runBlocking(openssl, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                   "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=Pigeon test directory CA"])
        try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n".utf8).write(to: folder.appendingPathComponent("server.ext"))
        _ = try ChildProcess.runBlocking(openssl, ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                   "-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=localhost"])
        _ = try ChildProcess.runBlocking(openssl, ["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                                                   "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("server.ext")])
    }

    /// The repository's `tests/directory/` (the templates `start_directory` uses too).
    package static var templates: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tests/directory")
    }

    private static func configuration(folder: String) throws -> String {
        try String(contentsOf: templates.appendingPathComponent("slapd.conf.template"), encoding: .utf8)
            .replacingOccurrences(of: "@FOLDER@", with: folder)
    }

    private static func seed() throws -> String {
        try String(contentsOf: templates.appendingPathComponent("seed.ldif.template"), encoding: .utf8)
    }
}
