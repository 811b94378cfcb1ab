import Foundation
import PigeonCore
import PigeonHTTP
import PigeonTestSupport
import Testing

/// One process per address: a second listener on an address in use fails at start, naming it,
/// instead of sharing the port (SO_REUSEPORT) and taking half of the connections unnoticed.
@Suite("Listener addresses", .enabled(if: TestTier.runsIntegration, "integration tier (sockets): PIGEON_TEST_TIER"))
struct ListenerAddressTests {
    static func start(port: UInt16) throws -> HTTPServer {
        try HTTPServer(configuration: .init(host: "127.0.0.1", port: port, handlerThreads: 1), logger: .silent,
                       admit: { _ in .accept(maxBytes: 0) }, handler: { _ in HTTPResponse(status: 204) })
    }

    /// A listener on a port below the kernel's ephemeral range (32768…): no client connection of
    /// the tests running alongside can be holding it when the test binds it again.
    static func startBelowEphemeralPorts() throws -> HTTPServer {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            if let server = try? start(port: UInt16.random(in: 20_000..<30_000, using: &generator)) { return server }
        }
        return try start(port: 0)
    }

    @Test("a second listener on the same address fails at start and says the address is in use")
    func secondListenerRefused() throws {
        let first = try Self.startBelowEphemeralPorts()
        defer { first.stop() }
        do {
            let second = try Self.start(port: first.port)
            second.stop()
            Issue.record("a second listener started on 127.0.0.1:\(first.port)")
        } catch let error as HTTPServer.StartError {
            #expect(error.description.contains("127.0.0.1 port \(first.port): the address is in use"), "\(error)")
        }
        // Once the first stops, the address is free (SO_REUSEADDR): a restart binds. Not always at
        // the same instant: a child process a test running alongside spawns holds a copy of this
        // process's descriptors, the listener's close-on-exec one included, from its fork to its
        // exec (seen once in a full run, EADDRINUSE on the rebind). Waiting for that is a wait for a
        // condition; an address that never comes free still fails.
        first.stop()
        let deadline = ContinuousClock.now + .seconds(60)
        var restarted: HTTPServer?
        while restarted == nil {
            do {
                restarted = try Self.start(port: first.port)
            } catch where ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        restarted?.stop()
    }
}
