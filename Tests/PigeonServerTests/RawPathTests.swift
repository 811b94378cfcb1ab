import Foundation
import PigeonCore
import PigeonHTTP
import PigeonTestSupport
@testable import PigeonConsole
@testable import PigeonWallet
import Synchronization
import Testing

/// Paths and queries reach the handlers as the client sent them, still percent-encoded, so each
/// id is decoded once, after the path is split (issue 45: ids were decoded twice, and `%2F` split
/// an id in two).
@Suite("Raw paths", .enabled(if: TestTier.runsIntegration, "integration tier (sockets): PIGEON_TEST_TIER"))
struct RawPathTests {
    @Test("the listener hands the path and the query over undecoded; the console API and PassKit decode each part once")
    func undecoded() async throws {
        final class Seen: Sendable { let value = Mutex<(path: String, query: [String])>(("", [])) }
        let seen = Seen()
        let server = try HTTPServer(configuration: .init(host: "127.0.0.1", port: 0, handlerThreads: 1), logger: .silent,
                                    admit: { _ in .accept(maxBytes: 0) }, handler: { request in
            seen.value.withLock { $0 = (request.path, request.query.map { "\($0.name)=\($0.value ?? "")" }) }
            return HTTPResponse(status: 204)
        })
        defer { server.stop() }
        _ = try await ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "--path-as-is",
                                                         "http://127.0.0.1:\(server.port)/console/api/v1/notifications/pay%2F1%2525?id=pay%2B1+x&page=2"])
        let (path, query) = seen.value.withLock { $0 }
        #expect(path == "/console/api/v1/notifications/pay%2F1%2525")
        // libmicrohttpd turns a query's `+` into a space itself; the percent-encoding stays.
        #expect(query == ["id=pay%2B1 x", "page=2"])
        #expect(ConsoleEndpoint.apiSegments(path) == ["notifications", "pay/1%25"])
        #expect(FormFields.query([("id", "pay%2B1+x")])["id"] == "pay+1 x", "a + typed into the form stays a +")
        #expect(PassKitCall.parts(of: "/passkit/v1/passes/pass.com.example.card/card%201", prefix: "/passkit") == ["v1", "passes", "pass.com.example.card", "card 1"])
    }
}
