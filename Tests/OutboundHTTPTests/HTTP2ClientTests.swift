import Foundation
@testable import OutboundHTTP
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
        let server = try ReferenceServer()
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

    @Test("statuses come back as they are; a refused connection is a transport error")
    func errors() async throws {
        let server = try ReferenceServer()
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
        let server = try ReferenceServer()
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
        let server = try ReferenceServer()
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
        let server = try ReferenceServer()
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
