import Foundation
import PigeonCore
import PigeonHTTP
import PigeonTestSupport
import Synchronization
import Testing

/// A listener's stop awaits the requests in progress (CONTRACT §10: a stop answers what it
/// accepted) without a thread polling their count.
@Suite("Listener drain", .enabled(if: TestTier.runsIntegration, "integration tier (sockets and curl): PIGEON_TEST_TIER"))
struct ListenerDrainTests {
    @Test("a drain waits for the handler in progress and is bounded: held, it gives up at its limit; released, the request is answered and the drain reports none left")
    func drainAwaitsHandlers() async throws {
        let (released, release) = AsyncStream<Void>.makeStream()
        let started = Mutex(false)
        let server = try HTTPServer(configuration: .init(host: "127.0.0.1", port: 0, handlerThreads: 1), logger: .silent,
                                    admit: { _ in .accept(maxBytes: 0) }, handler: { _ in
            started.withLock { $0 = true }
            for await _ in released { break }
            return HTTPResponse(status: 204)
        })
        defer { server.stop() }
        let request = Task {
            try await ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/held"])
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while !started.withLock({ $0 }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(started.withLock { $0 })
        #expect(server.requestsInFlight == 1)
        // Held: the handler cannot answer, so a short drain gives up.
        #expect(await server.drain(upTo: 0.05) == false)
        let draining = Task { await server.drain(upTo: 600) }
        server.quiesce()
        release.yield()
        #expect(await draining.value == true)
        #expect(String(decoding: try await request.value, as: UTF8.self) == "204")
    }
}
