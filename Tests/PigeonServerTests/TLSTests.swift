import Foundation
@testable import PigeonConfiguration
import PigeonCore
@testable import PigeonServer
import PigeonTestSupport
import Testing

@Suite("HTTPS listener", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct TLSTests {
    @Test("tlsCertificatePath/tlsKeyPath serve HTTPS, and the WSDL address says https")
    func https() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("tls"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let certificate = folder.appendingPathComponent("server.crt").path
        let key = folder.appendingPathComponent("server.key").path
        try await run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                                     "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        let harness = try await GatewayHarness {
            $0.http.tlsCertificatePath = certificate
            $0.http.tlsKeyPath = key
        }
        let health = try await run("/usr/bin/curl", ["-sS", "--cacert", certificate, harness.baseURL + "/health"])
        #expect(health.contains("UP"))
        let wsdl = try await run("/usr/bin/curl", ["-sS", "--cacert", certificate, harness.baseURL + GatewayHarness.soapPath + "?wsdl"])
        #expect(wsdl.contains("location=\"https://127.0.0.1:\(harness.gateway.port)/pigeon/services/SBIInboundWebService\""))
        let plain = try? await run("/usr/bin/curl", ["-sS", "--max-time", "5", "http://127.0.0.1:\(harness.gateway.port)/health"])
        #expect(plain?.contains("UP") != true)
    }

    @Test("a reload presents renewed certificate files to new connections; a mismatched key or a missing file keeps the one in use")
    func certificateReload() async throws {
        let folder = try await selfSignedCertificates([("old", 1), ("new", 30)])
        defer { try? FileManager.default.removeItem(at: folder) }
        func file(_ name: String) -> String { folder.appendingPathComponent(name).path }
        func install(certificate: String, key: String) throws {
            for (source, target) in [(certificate, "server.crt"), (key, "server.key")] {
                try? FileManager.default.removeItem(atPath: file(target))
                try FileManager.default.copyItem(atPath: file(source), toPath: file(target))
            }
        }
        try install(certificate: "old.crt", key: "old.key")
        let harness = try await GatewayHarness {
            $0.http.tlsCertificatePath = file("server.crt")
            $0.http.tlsKeyPath = file("server.key")
            // The console, on this loopback listen, shows the certificate's expiry.
            $0.console.username = "operator"
            $0.console.password = ConsoleTests.password
        }
        let port = harness.gateway.port
        func presented() async throws -> String {
            let output = try await ChildProcess.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)"], input: Data(), allowFailure: true)
            let text = String(decoding: output, as: UTF8.self)
            return ["pigeon-old", "pigeon-new"].first { text.contains("CN = \($0)") || text.contains("CN=\($0)") } ?? "none: \(text.prefix(300))"
        }
        func expiry() -> Double? {
            _ = harness.gateway.metrics.render()
            return harness.gateway.metrics.gauge(Metric.tlsCertificateExpiryTimestampSeconds, labels: ["listener": "public"])
        }
        #expect(try await presented() == "pigeon-old")
        let oldExpiry = try #require(expiry())

        try install(certificate: "new.crt", key: "new.key")
        let reloaded = harness.gateway.reloadCertificates()
        #expect(reloaded.map(\.listener) == ["public"])
        #expect(reloaded.first?.error == nil)
        #expect(try await presented() == "pigeon-new")
        let health = try await run("/usr/bin/curl", ["-sS", "--cacert", file("new.crt"), harness.baseURL + "/health"])
        #expect(health.contains("UP"))
        // One certificate valid for a day, the other for thirty: the gauge follows the one presented.
        let newExpiry = try #require(expiry())
        #expect(newExpiry - oldExpiry > 28 * 86_400)
        #expect(harness.gateway.metrics.render().contains("pigeon_tls_certificate_expiry_timestamp_seconds{listener=\"public\"}"))
        var console = ConsoleTests.Operator(base: harness.baseURL, curlOptions: ["--cacert", file("new.crt")])
        let signedIn = try await console.call("POST", "/console/login", form: ["username": "operator", "password": ConsoleTests.password])
        console.cookie = WalletPassHarness.firstMatch("pigeon_console=([^;]+)", in: signedIn.headers["set-cookie"] ?? "")?.first
        let overview = try await console.call("GET", "/console")
        #expect(overview.body.contains("TLS certificate (listen)") && overview.body.contains("(29 days)"), "\(overview.status) \(overview.body.suffix(3000))")

        // The renewed certificate with the old key, then no key file at all: refused, and the
        // listener goes on presenting the renewed certificate.
        try install(certificate: "new.crt", key: "old.key")
        let mismatched = harness.gateway.reloadCertificates()
        #expect(mismatched.first?.error?.contains("does not belong") == true, "\(mismatched)")
        try FileManager.default.removeItem(atPath: file("server.key"))
        let missing = harness.gateway.reloadCertificates()
        #expect(missing.first?.error?.contains("server.key") == true, "\(missing)")
        #expect(try await presented() == "pigeon-new")
        #expect(expiry() == newExpiry)
        #expect(harness.logs.records.filter { $0.message.contains("TLS certificate not reloaded") && $0.level == .error }.count == 2)

        // A DER (binary) certificate, and a file of 17 certificates: each refused with its reason.
        try await run("/usr/bin/openssl", ["x509", "-in", file("new.crt"), "-outform", "DER", "-out", file("new.der")])
        try install(certificate: "new.der", key: "new.key")
        let binary = harness.gateway.reloadCertificates()
        #expect(binary.first?.error?.contains("is not PEM text") == true, "\(binary)")
        let pem = try String(contentsOfFile: file("new.crt"), encoding: .utf8)
        try String(repeating: pem, count: 17).write(toFile: file("server.crt"), atomically: true, encoding: .utf8)
        let long = harness.gateway.reloadCertificates()
        #expect(long.first?.error?.contains("more than 16 certificates") == true, "\(long)")
        #expect(try await presented() == "pigeon-new")
        // A certificate past its end date (the renewed one, a month and a day on): refused.
        try install(certificate: "new.crt", key: "new.key")
        let expired = harness.gateway.reloadCertificates(now: Date().addingTimeInterval(31 * 86_400))
        #expect(expired.first?.error?.contains("expired at") == true, "\(expired)")
        #expect(expired.first?.expiry == nil)
        // A certificate not valid yet (the renewed one, two days before it was made): refused.
        let early = harness.gateway.reloadCertificates(now: Date().addingTimeInterval(-2 * 86_400))
        #expect(early.first?.error?.contains("not valid before") == true, "\(early)")
        #expect(try await presented() == "pigeon-new")
    }

    @Test("check-config reads each HTTPS listener's pair as a reload would: its expiry, or the key and why it is refused; serve refuses the same pair at start")
    func checkConfigReadsCertificates() async throws {
        let folder = try await selfSignedCertificates([("public", 10), ("bank", 10)])
        defer { try? FileManager.default.removeItem(at: folder) }
        func file(_ name: String) -> String { folder.appendingPathComponent(name).path }
        var configuration = GatewayConfiguration()
        configuration.http.tlsCertificatePath = file("public.crt")
        configuration.http.tlsKeyPath = file("public.key")
        configuration.http.bankAddress = (host: "127.0.0.1", port: 0)
        configuration.http.bankTlsCertificatePath = file("bank.crt")
        configuration.http.bankTlsKeyPath = file("bank.key")
        let lines = try configuration.checkListenerCertificates()
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("listen: HTTPS, certificate \(file("public.crt")) valid until"), "\(lines)")
        #expect(lines[1].hasPrefix("bankListen: HTTPS"), "\(lines)")
        #expect(lines.allSatisfy { $0.contains("(9 days)") || $0.contains("(10 days)") }, "\(lines)")
        // Ten days on, the same certificate fails the check (a reload would refuse it).
        #expect {
            try configuration.checkListenerCertificates(now: Date().addingTimeInterval(11 * 86_400))
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.location == "tlsCertificatePath" && error?.message.contains("expired at") == true
        }
        // Two days before it was made, it is not valid yet: clients would refuse it.
        #expect {
            try configuration.checkListenerCertificates(now: Date().addingTimeInterval(-2 * 86_400))
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.location == "tlsCertificatePath" && error?.message.contains("not valid before") == true
        }

        configuration.http.bankTlsKeyPath = file("public.key")
        #expect {
            try configuration.checkListenerCertificates()
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.location == "bankTlsCertificatePath" && error?.message.contains("does not belong") == true
        }
        // The same pair at start: refused before listening, naming the files.
        await #expect {
            _ = try await GatewayHarness {
                $0.http.tlsCertificatePath = file("bank.crt")
                $0.http.tlsKeyPath = file("public.key")
            }
        } throws: { error in
            "\(error)".contains("does not belong") && "\(error)".contains(file("bank.crt"))
        }
    }

    /// A new folder with a self-signed certificate and key for 127.0.0.1 per name (`name.crt`,
    /// `name.key`, subject `CN=pigeon-name`), valid for the days given.
    func selfSignedCertificates(_ validity: [(name: String, days: Int)]) async throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(TestDatabase.unique("tls"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, days) in validity {
            let base = folder.appendingPathComponent(name).path
            try await run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", base + ".key", "-out", base + ".crt",
                                         "-days", String(days), "-subj", "/CN=pigeon-\(name)", "-addext", "subjectAltName=IP:127.0.0.1"])
        }
        return folder
    }

    @discardableResult
    func run(_ executable: String, _ arguments: [String]) async throws -> String {
        String(decoding: try await ChildProcess.run(executable, arguments), as: UTF8.self)
    }
}
