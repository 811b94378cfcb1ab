import Dispatch
import Foundation
import PigeonCore
import PigeonHTTP
import PigeonTestSupport
import Synchronization
import Testing

/// A listener whose I/O thread is busy does not blame its clients for it: a connection whose head
/// waits unread in its socket has spoken, and is not cut as silent (issue 45: on a loaded machine a
/// bank's right call among a neighbour's wrong ones was once cut this way).
@Suite("A busy listener", .enabled(if: TestTier.runsIntegration, "integration tier (sockets): PIGEON_TEST_TIER"))
struct BusyListenerTests {
    /// Python: the imports the scripts use, and `status(connection)`: the status of the answer
    /// read on it (0: none).
    static let statusOf = #"""
        import json, os, socket, sys, time
        def status(connection):
            try:
                head = connection.makefile("rb").readline().split()
                return int(head[1]) if len(head) > 1 else 0
            except OSError:
                return 0

        """#

    /// Releases the I/O thread it holds: the admission of a `/block` request waits on it, as a
    /// burst on a loaded machine would hold the thread.
    final class Gate: Sendable {
        let entered = Mutex(false)
        let release = DispatchSemaphore(value: 0)
    }

    /// A listener with one I/O thread whose `/block` requests hold it at their admission until
    /// the gate is released; every request is answered 204.
    static func heldServer(_ configuration: HTTPServer.Configuration) throws -> (server: HTTPServer, gate: Gate) {
        let gate = Gate()
        let server = try HTTPServer(configuration: configuration, logger: .silent,
            admit: { request in
                if request.path == "/block" {
                    gate.entered.withLock { $0 = true }
                    gate.release.wait()
                }
                return .accept(maxBytes: 0)
            },
            handler: { _ in HTTPResponse(status: 204) })
        return (server, gate)
    }

    /// Opens connection B (silent), waits for the file GO, then sends a head on a new connection A
    /// and B's head at once, and prints the two statuses as JSON (0: no answer).
    static let twoConnections = Self.statusOf + #"""
        port, go = int(sys.argv[1]), sys.argv[2]
        b = socket.create_connection(("127.0.0.1", port), timeout=60)
        while not os.path.exists(go): time.sleep(0.01)
        a = socket.create_connection(("127.0.0.1", port), timeout=60)
        a.sendall(b"GET /block HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        b.sendall(b"GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        print(json.dumps({"a": status(a), "b": status(b)}), flush=True)
        """#

    @Test("a connection whose head waits unread while the I/O thread is held is not cut at the silent-connection deadline; it is answered once the thread is free")
    func unreadHeadIsNotSilence() async throws {
        // B must still be open when the thread is held (on a loaded machine its deadline may pass
        // before that): such an attempt proves nothing and is made again.
        var proven = 0
        for _ in 0..<5 where proven == 0 {
            guard let outcome = try await Self.attempt() else { continue }
            proven += 1
            #expect(outcome.closuresWhileHeld == 0, "B was cut as silent while its head waited unread")
            #expect(outcome.output.contains(#""a": 204"#) && outcome.output.contains(#""b": 204"#), "\(outcome.output)")
        }
        #expect(proven == 1, "in no attempt was B still open when the I/O thread was held")
    }

    /// One run: nil when B was cut before the thread was held.
    static func attempt() async throws -> (closuresWhileHeld: Int, output: String)? {
        let (server, gate) = try Self.heldServer(.init(host: "127.0.0.1", port: 0, ioThreads: 1, handlerThreads: 1,
                                 unauthenticatedLimit: 16, unauthenticatedPerAddressLimit: 16, unauthenticatedDeadlineSeconds: 2))
        defer { server.stop() }
        let go = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-busy-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: go) }
        let client = Task { try await ChildProcess.run("/usr/bin/python3", ["-c", Self.twoConnections, String(server.port), go]) }
        // B is accepted (it counts as an unauthenticated connection) before the thread is held.
        let accepted = try await EdgeTests.waitUntil(seconds: 60) { server.unauthenticatedConnections == 1 || server.unauthenticatedClosures > 0 }
        _ = FileManager.default.createFile(atPath: go, contents: Data())
        #expect(try await EdgeTests.waitUntil(seconds: 60) { gate.entered.withLock { $0 } }, "A's head admitted")
        let closuresAtHold = server.unauthenticatedClosures
        // Past B's 2 s deadline to speak, several rounds of the reaper (every 0.2 s), while B's
        // head waits unread: without the check B is cut here.
        try await Task.sleep(for: .seconds(3.5))
        let closuresWhileHeld = server.unauthenticatedClosures
        gate.release.signal()
        let output = String(decoding: try await client.value, as: UTF8.self)
        guard accepted, closuresAtHold == 0 else { return nil }
        return (closuresWhileHeld, output)
    }

    /// Opens 4 silent connections, waits for the file GO1, sends a head on a new connection A,
    /// waits for GO2, opens B and sends its head (then touches B_SENT), and prints A's and B's
    /// statuses as JSON (0: no answer).
    static let cutButNotClosed = Self.statusOf + #"""
        port, go1, go2, b_sent = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
        def wait(path):
            while not os.path.exists(path): time.sleep(0.01)
        silent = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(4)]
        wait(go1)
        a = socket.create_connection(("127.0.0.1", port), timeout=60)
        a.sendall(b"GET /block HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        wait(go2)
        b = socket.create_connection(("127.0.0.1", port), timeout=60)
        b.sendall(b"GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        open(b_sent, "w").close()
        print(json.dumps({"a": status(a), "b": status(b)}), flush=True)
        """#

    @Test("connections cut while the I/O thread is held no longer count against the address's connection limit: a new connection is let in though libmicrohttpd has not closed them yet")
    func cutConnectionsDoNotHoldTheLimit() async throws {
        var proven = 0
        for _ in 0..<5 where proven == 0 {
            guard let output = try await Self.cutAttempt() else { continue }
            proven += 1
            #expect(output.contains(#""a": 204"#) && output.contains(#""b": 204"#), "\(output)")
        }
        #expect(proven == 1, "in no attempt were the silent connections cut while the I/O thread was held")
    }

    /// One run: nil when the silent connections were cut before the thread was held.
    static func cutAttempt() async throws -> String? {
        // 5 connections an address, silent ones cut after 1 s.
        let (server, gate) = try Self.heldServer(.init(host: "127.0.0.1", port: 0, connectionLimit: 64, perAddressConnectionLimit: 5, ioThreads: 1, handlerThreads: 1,
                                 unauthenticatedLimit: 32, unauthenticatedPerAddressLimit: 16, unauthenticatedDeadlineSeconds: 1))
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-cut-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (go1, go2, bSent) = (folder.appendingPathComponent("go1").path, folder.appendingPathComponent("go2").path, folder.appendingPathComponent("b").path)
        let client = Task { try await ChildProcess.run("/usr/bin/python3", ["-c", Self.cutButNotClosed, String(server.port), go1, go2, bSent]) }
        var released = false
        defer { if !released { gate.release.signal() } }
        let accepted = try await EdgeTests.waitUntil(seconds: 60) { server.unauthenticatedConnections == 4 || server.unauthenticatedClosures > 0 }
        _ = FileManager.default.createFile(atPath: go1, contents: Data())
        #expect(try await EdgeTests.waitUntil(seconds: 60) { gate.entered.withLock { $0 } }, "A's head admitted")
        let cutBeforeHold = server.unauthenticatedClosures
        // The reaper cuts the four silent ones while the thread is held: libmicrohttpd cannot
        // close them until it is free, so they still fill the address's 5 in its own count.
        let cut = try await EdgeTests.waitUntil(seconds: 60) { server.unauthenticatedClosures >= 4 }
        _ = FileManager.default.createFile(atPath: go2, contents: Data())
        _ = try await EdgeTests.waitUntil(seconds: 60) { FileManager.default.fileExists(atPath: bSent) }
        gate.release.signal()
        released = true
        let output = String(decoding: try await client.value, as: UTF8.self)
        guard accepted, cutBeforeHold == 0, cut else { return nil }
        return output
    }
}
