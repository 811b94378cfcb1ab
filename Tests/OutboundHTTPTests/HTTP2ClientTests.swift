import Foundation
@testable import OutboundHTTP
import PigeonCore
import PigeonTestSupport
import Synchronization
import Testing

/// The HTTP/2 client against Debian's `nghttpd` (a reference HTTP/2 server) over TLS.
@Suite("HTTP/2 client", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nghttpd"), "needs nghttp2-server"), .enabled(if: TestTier.runsIntegration, "integration tier (sockets and nghttpd): PIGEON_TEST_TIER"))
struct HTTP2ClientTests {
    /// A running nghttpd with a self-signed certificate, serving `answer`.
    final class ReferenceServer: @unchecked Sendable {
        let folder: URL
        let port: Int
        let process: Process

        /// Starts one off the cooperative pool: making the key and waiting for nghttpd block
        /// their thread, for seconds on a loaded machine.
        static func start() async throws -> ReferenceServer {
            try await BlockingWork.run("nghttpd") { try ReferenceServer() }
        }

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("h2-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("root"), withIntermediateDirectories: true)
            try Data(#"{"ok":true}"#.utf8).write(to: folder.appendingPathComponent("root/answer"))
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            openssl.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder.appendingPathComponent("key.pem").path,
                                 "-out", folder.appendingPathComponent("cert.pem").path, "-days", "1", "-subj", "/CN=127.0.0.1",
                                 "-addext", "subjectAltName=IP:127.0.0.1"]
            openssl.standardError = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
            // A loaded CI machine may start nghttpd slowly, or another test may take the port
            // first: wait until it accepts, and try another port if it exits.
            for _ in 0..<5 {
                guard let candidate = LoopbackPort.free() else { continue }
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/sbin/nghttpd")
                process.arguments = ["-d", folder.appendingPathComponent("root").path, "--address=127.0.0.1", String(candidate),
                                     folder.appendingPathComponent("key.pem").path, folder.appendingPathComponent("cert.pem").path]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                if LoopbackPort.waitUntilListening(candidate, processIdentifier: process.processIdentifier, stillStarting: { process.isRunning }) {
                    self.process = process
                    port = candidate
                    return
                }
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            throw CocoaError(.executableLoad)
        }

        var caFile: String { folder.appendingPathComponent("cert.pem").path }
        var base: String { "https://127.0.0.1:\(port)" }

        deinit {
            // nghttpd ignores SIGTERM while it has connections; SIGKILL ends it at once.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    @Test("500 concurrent POSTs are multiplexed over at most two connections")
    func multiplexing() async throws {
        let server = try await ReferenceServer.start()
        let client = try HTTP2Client(configuration: .init(maxConnections: 2, maxStreamsPerConnection: 100, caFile: server.caFile))
        defer { client.shutdown() }
        let responses = try await withThrowingTaskGroup(of: HTTP2Client.Response.self) { group in
            for index in 0..<500 {
                group.addTask {
                    try await client.send(url: server.base + "/answer", headers: ["content-type": "application/json", "x-index": String(index)],
                                          body: Data(#"{"n":\#(index)}"#.utf8), wantHeaders: ["content-length", "server"])
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 500)
        #expect(responses.allSatisfy { $0.status == 200 && $0.httpVersion == 2 && $0.body == Data(#"{"ok":true}"#.utf8) })
        #expect(responses.first?.headers["content-length"] == "11")
        #expect(client.connectionsOpened >= 1 && client.connectionsOpened <= 2)
    }

    @Test("a finished transfer is reused for the next request and carries nothing of the one before: not its answer, headers or connection rule")
    func reusedTransfers() async throws {
        let server = try await ReferenceServer.start()
        // Kept far longer than the test: on a loaded machine its task may wait long for a thread
        // between requests, and the count must not depend on that (it once read 0 in CI).
        var configuration = HTTP2Client.Configuration(maxConnections: 2, maxStreamsPerConnection: 100, timeout: .seconds(10), caFile: server.caFile)
        configuration.idleTransfersKeptFor = .seconds(3600)
        let client = try HTTP2Client(configuration: configuration)
        defer { client.shutdown() }
        let answer = Data(#"{"ok":true}"#.utf8)
        // One at a time: a single transfer serves them all when it is reused.
        for index in 0..<10 {
            let found = index % 2 == 0
            let response = try await client.send(url: server.base + (found ? "/answer" : "/missing"), method: found ? "POST" : "GET",
                                                 headers: ["x-index": String(index)], body: Data(#"{"n":\#(index)}"#.utf8),
                                                 wantHeaders: ["content-length"])
            #expect(response.status == (found ? 200 : 404))
            if found {
                #expect(response.body == answer)
                #expect(response.headers["content-length"] == "11")
            } else {
                // The 404 page's own length, not the answer's left from the request before.
                #expect(response.headers["content-length"] == String(response.body.count))
                #expect(response.body != answer && !response.body.isEmpty)
            }
        }
        // Kept once finished, taken again by the next: one transfer, not one a request (and not none).
        let idle = await Self.settled({ client.idleTransfers }, at: 1)
        #expect(idle == 1, "ten requests one after another left \(idle) idle transfers")
        // A request that must not be repeated gets a connection of its own, never reused; the
        // transfer it leaves behind, reused next, does not keep that rule.
        let before = client.connectionsOpened
        _ = try await client.send(url: server.base + "/answer", headers: [:], body: Data(), idempotent: false)
        // The driving thread publishes its count once the answer is handed over.
        #expect(await Self.settled({ client.connectionsOpened }, at: before + 1) == before + 1)
        for _ in 0..<3 {
            #expect(try await client.send(url: server.base + "/answer", headers: [:], body: Data()).status == 200)
        }
        #expect(client.connectionsOpened == before + 1, "requests after a non-repeatable one opened connections of their own")
    }

    @Test("once nothing has been in flight for a while, the client frees the transfers it kept")
    func idleTransfersFreed() async throws {
        let server = try await ReferenceServer.start()
        var configuration = HTTP2Client.Configuration(timeout: .seconds(10), caFile: server.caFile)
        configuration.idleTransfersKeptFor = .milliseconds(200)
        let client = try HTTP2Client(configuration: configuration)
        defer { client.shutdown() }
        let answers = Answers()
        let requests = (0..<20).map { index in
            HTTP2Client.Request(url: server.base + "/answer", headerLines: ["x-index: \(index)"], body: Data())
        }
        await client.send(requests, maxInFlight: 20) { index, result in answers.add(index, result) }
        #expect(answers.all.count == 20)
        #expect(await Self.settled({ client.idleTransfers }, at: 0) == 0, "the kept transfers outlived the client's quiet")
        // And the client goes on: the next request makes a transfer anew.
        #expect(try await client.send(url: server.base + "/answer", headers: [:], body: Data()).status == 200)
    }

    /// `read()` once it equals `expected`, or its value after 10 seconds.
    static func settled(_ read: () -> Int, at expected: Int) async -> Int {
        let deadline = ContinuousClock.now + .seconds(10)
        while read() != expected && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        return read()
    }

    @Test("statuses come back as they are; a refused connection is a transport error")
    func errors() async throws {
        let server = try await ReferenceServer.start()
        let client = try HTTP2Client(configuration: .init(timeout: .seconds(5), caFile: server.caFile))
        defer { client.shutdown() }
        let missing = try await client.send(url: server.base + "/missing", headers: [:], body: Data("x".utf8))
        #expect(missing.status == 404)
        await #expect(throws: HTTP2Client.TransportError.self) {
            try await client.send(url: "https://127.0.0.1:9/answer", headers: [:], body: Data())
        }
        let untrusted = try HTTP2Client(configuration: .init(timeout: .seconds(5)))
        defer { untrusted.shutdown() }
        await #expect(throws: HTTP2Client.TransportError.self) {
            try await untrusted.send(url: server.base + "/answer", headers: [:], body: Data())
        }
    }

    @Test("a batch is one submission: every request answered once, by its own index, and the call returns when all are")
    func batch() async throws {
        let server = try await ReferenceServer.start()
        let client = try HTTP2Client(configuration: .init(maxConnections: 2, maxStreamsPerConnection: 100, caFile: server.caFile))
        let requests = (0..<300).map { index in
            HTTP2Client.Request(url: server.base + (index % 3 == 0 ? "/missing" : "/answer"), headerLines: ["x-index: \(index)"],
                                body: Data(#"{"n":\#(index)}"#.utf8), wantHeaders: ["content-length"])
        }
        let answers = Answers()
        await client.send(requests, maxInFlight: 16) { index, result in answers.add(index, result) }
        let collected = answers.all
        #expect(collected.count == 300)
        #expect(Set(collected.map(\.index)).count == 300)
        for (index, result) in collected {
            let response = try result.get()
            #expect(response.status == (index % 3 == 0 ? 404 : 200))
            #expect(response.duration > .zero)
        }
        client.shutdown()
        let late = Answers()
        await client.send(Array(requests.prefix(5)), maxInFlight: 2) { index, result in late.add(index, result) }
        #expect(late.all.count == 5)
        #expect(late.all.allSatisfy { if case .failure = $0.result { true } else { false } })
    }

    @Test("a request whose notAfter has passed is answered 'expired' without being sent; the others of its batch go out")
    func expiredRequestsStayUnsent() async throws {
        let server = try await ReferenceServer.start()
        let client = try HTTP2Client(configuration: .init(maxConnections: 1, maxStreamsPerConnection: 4, caFile: server.caFile))
        defer { client.shutdown() }
        let past = Date().addingTimeInterval(-1)
        let future = Date().addingTimeInterval(3600)
        let requests = (0..<40).map { index in
            HTTP2Client.Request(url: server.base + "/answer", headerLines: [], body: Data(), notAfter: index % 2 == 0 ? past : future)
        }
        let answers = Answers()
        await client.send(requests, maxInFlight: 40) { index, result in answers.add(index, result) }
        let collected = answers.all
        #expect(collected.count == 40)
        for (index, result) in collected {
            switch result {
            case .success(let response):
                #expect(index % 2 == 1 && response.status == 200)
            case .failure(let error):
                #expect(index % 2 == 0 && error.code == HTTP2Client.expiredCode)
            }
        }
    }

    @Test("a batch whose task is cancelled starts nothing more: the requests answered so far stand, the rest are answered 'not started' and the call returns")
    func cancelledBatchStopsStarting() async throws {
        let server = try await ReferenceServer.start()
        let client = try HTTP2Client(configuration: .init(maxConnections: 1, maxStreamsPerConnection: 4, caFile: server.caFile))
        defer { client.shutdown() }
        let requests = (0..<200).map { _ in HTTP2Client.Request(url: server.base + "/answer", headerLines: [], body: Data()) }
        let answers = Answers()
        let sending = Mutex<Task<Void, Never>?>(nil)
        // One request at a time; the fifth answer cancels the sending task from the client's
        // own thread, before it starts the sixth.
        let task = Task {
            while sending.withLock({ $0 == nil }) { await Task.yield() }
            await client.send(requests, maxInFlight: 1) { index, result in
                answers.add(index, result)
                if answers.all.count == 5 { sending.withLock { $0 }?.cancel() }
            }
        }
        sending.withLock { $0 = task }
        await task.value
        let collected = answers.all
        #expect(collected.count == 200)
        #expect(Set(collected.map(\.index)).count == 200)
        let answered = collected.filter { if case .success(let response) = $0.result { response.status == 200 } else { false } }
        let notStarted = collected.filter { if case .failure(let error) = $0.result { error.code == HTTP2Client.notStartedCode } else { false } }
        #expect(answered.count == 5)
        #expect(notStarted.count == 195)
        // The client goes on serving other batches.
        let later = Answers()
        await client.send(Array(requests.prefix(3)), maxInFlight: 3) { index, result in later.add(index, result) }
        #expect(later.all.allSatisfy { (try? $0.result.get().status) == 200 })
    }

    /// Results collected from the client's thread.
    final class Answers: Sendable {
        private let entries = Mutex<[(index: Int, result: Result<HTTP2Client.Response, HTTP2Client.TransportError>)]>([])
        func add(_ index: Int, _ result: Result<HTTP2Client.Response, HTTP2Client.TransportError>) { entries.withLock { $0.append((index, result)) } }
        var all: [(index: Int, result: Result<HTTP2Client.Response, HTTP2Client.TransportError>)] { entries.withLock { $0 } }
    }
}
