import Foundation
import PigeonCore
import PigeonTestSupport
import Testing
@testable import PigeonServer

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

    @discardableResult
    func run(_ executable: String, _ arguments: [String]) async throws -> String {
        String(decoding: try await ChildProcess.run(executable, arguments), as: UTF8.self)
    }
}
