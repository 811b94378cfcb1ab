import Foundation
import OutboundHTTP
@testable import PigeonSimulator
import PigeonTestSupport
@testable import PushCore
@testable import PushTransport
import Synchronization
import Testing

/// Our HTTP/2 server against our HTTP/2 client, over real TLS with a CA made by openssl.
@Suite("HTTP/2 server", .enabled(if: TestTier.runsIntegration, "integration tier (sockets): PIGEON_TEST_TIER"))
struct H2ServerTests {
    final class Certificates: @unchecked Sendable {
        let folder: URL
        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("h2s-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            _ = try ChildProcess.runBlocking("/usr/bin/openssl", [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1"])
        }
        var key: String { folder.appendingPathComponent("key.pem").path }
        var certificate: String { folder.appendingPathComponent("cert.pem").path }
        deinit { try? FileManager.default.removeItem(at: folder) }
    }

    @Test("requests arrive whole and responses go back, with and without bodies")
    func exchange() async throws {
        let certificates = try Certificates()
        let seen = Mutex<[String]>([])
        let server = try H2Server(configuration: .init(certificateFile: certificates.certificate, keyFile: certificates.key)) { request in
            seen.withLock { $0.append("\(request.method) \(request.path) \(request.headers["apns-topic"] ?? "-") \(request.body.count)") }
            if request.path.hasSuffix("/bad") {
                return .json(400, #"{"reason":"BadDeviceToken"}"#)
            }
            return H2Server.Response(status: 200, headers: ["apns-id": "id-\(request.body.count)"])
        }
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(maxConnections: 1, caFile: certificates.certificate))
        defer { client.shutdown() }
        let base = "https://127.0.0.1:\(server.port)/3/device/"
        let results = try await withThrowingTaskGroup(of: HTTP2Client.Response.self) { group in
            for index in 0..<300 {
                group.addTask {
                    try await client.send(url: base + (index % 3 == 0 ? "bad" : "good\(index)"), headers: ["apns-topic": "com.bank"],
                                          body: Data(repeating: 65, count: index), wantHeaders: ["apns-id"])
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 300)
        #expect(results.filter { $0.status == 400 }.count == 100)
        #expect(results.filter { $0.status == 400 }.allSatisfy { APNsResponse.classify(status: $0.status, body: $0.body, apnsId: nil) == .tokenDead(reason: "BadDeviceToken", since: nil) })
        #expect(results.filter { $0.status == 200 }.allSatisfy { $0.body.isEmpty && $0.headers["apns-id"] != nil && $0.httpVersion == 2 })
        #expect(seen.withLock { $0.count } == 300)
        #expect(seen.withLock { $0.contains("POST /3/device/good1 com.bank 1") })
        #expect(server.connectionsAccepted == 1)
    }

    @Test("requests waiting behind streams that never free come back 'expired' when their time is up, unsent; those on the wire stay")
    func waitingRequestsExpireBehindHeldStreams() async throws {
        let certificates = try Certificates()
        let seen = Mutex(0)
        // Every answer is held for ten minutes: the two streams never free within the test.
        let server = try H2Server(configuration: .init(certificateFile: certificates.certificate, keyFile: certificates.key)) { _ in
            seen.withLock { $0 += 1 }
            return H2Server.Response(status: 200, delayMilliseconds: 600_000)
        }
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(maxConnections: 1, maxStreamsPerConnection: 2, caFile: certificates.certificate))
        defer { client.shutdown(abandonRunning: true) }
        let url = "https://127.0.0.1:\(server.port)/3/device/held"
        // Two requests take the connection's two streams, for good.
        let held = Task {
            await client.send([HTTP2Client.Request(url: url, headerLines: [], body: Data()), HTTP2Client.Request(url: url, headerLines: [], body: Data())],
                              maxInFlight: 2) { _, _ in }
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while seen.withLock({ $0 }) < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(seen.withLock { $0 } == 2)
        // Eight more can never start; their time is up a second from now.
        let notAfter = Date().addingTimeInterval(1)
        let requests = (0..<8).map { _ in HTTP2Client.Request(url: url, headerLines: [], body: Data(), notAfter: notAfter) }
        let expired = Mutex<[Int]>([])
        let batch = Task {
            await client.send(requests, maxInFlight: 8) { index, result in
                if case .failure(let error) = result, error.code == HTTP2Client.expiredCode { expired.withLock { $0.append(index) } }
            }
        }
        // The batch returns once every request has its answer: without the expiry of waiting
        // requests it would wait for streams that never free.
        await batch.value
        #expect(Set(expired.withLock { $0 }) == Set(0..<8))
        #expect(seen.withLock { $0 } == 2)
        client.shutdown(abandonRunning: true)
        await held.value
    }

    @Test("a single request honours its caller's cancellation: one on the wire is abandoned and throws CancellationError, one cancelled before it was submitted is never sent; the client then closes awaited, with nothing left running")
    func singleRequestCancellation() async throws {
        let certificates = try Certificates()
        let seen = Mutex(0)
        // Every answer is held for ten minutes: only the cancellation can end the request.
        let server = try H2Server(configuration: .init(certificateFile: certificates.certificate, keyFile: certificates.key)) { _ in
            seen.withLock { $0 += 1 }
            return H2Server.Response(status: 200, delayMilliseconds: 600_000)
        }
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(timeout: .seconds(600), caFile: certificates.certificate))
        let url = "https://127.0.0.1:\(server.port)/3/device/held"
        let onTheWire = Task { try await client.send(url: url, headers: [:], body: Data()) }
        let deadline = ContinuousClock.now + .seconds(120)
        while seen.withLock({ $0 }) < 1 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(seen.withLock { $0 } == 1)
        onTheWire.cancel()
        await #expect(throws: CancellationError.self) { try await onTheWire.value }
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.send(url: url, headers: [:], body: Data())
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
        // Closed without abandoning: it returns, so nothing of the abandoned request was left running.
        await client.close()
        #expect(seen.withLock { $0 } == 1, "the request cancelled before it was submitted reached the server")
    }

    @Test("a batch whose requests all started in time but were answered after their start limit completes once, every answer a success")
    func answeredAfterStartLimit() async throws {
        let certificates = try Certificates()
        let server = try H2Server(configuration: .init(certificateFile: certificates.certificate, keyFile: certificates.key)) { request in
            H2Server.Response(status: 200, delayMilliseconds: request.path.hasSuffix("slow") ? 5_000 : 0)
        }
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(maxConnections: 1, maxStreamsPerConnection: 10, caFile: certificates.certificate))
        defer { client.shutdown() }
        // The connection is up before the batch.
        _ = try await client.send(url: "https://127.0.0.1:\(server.port)/3/device/first", headers: [:], body: Data())
        // Started at once (room for all), answered after their start limit has passed: the
        // client must not answer them again as expired, nor return twice.
        let notAfter = Date().addingTimeInterval(3)
        let requests = (0..<4).map { _ in
            HTTP2Client.Request(url: "https://127.0.0.1:\(server.port)/3/device/slow", headerLines: [], body: Data(), notAfter: notAfter)
        }
        let statuses = Mutex<[Int: Int]>([:])
        await client.send(requests, maxInFlight: 4) { index, result in
            statuses.withLock { $0[index, default: 0] += (try? result.get().status) == 200 ? 1 : 100 }
        }
        // Give the client's loop a few more turns over the finished batch.
        _ = try? await client.send(url: "https://127.0.0.1:\(server.port)/3/device/after", headers: [:], body: Data())
        #expect(statuses.withLock { $0 } == [0: 1, 1: 1, 2: 1, 3: 1])
    }

    @Test("after a GOAWAY the client opens a new connection and the rest succeed")
    func goAway() async throws {
        let certificates = try Certificates()
        let count = Mutex(0)
        let server = try H2Server(configuration: .init(certificateFile: certificates.certificate, keyFile: certificates.key)) { _ in
            let number = count.withLock { value in
                value += 1
                return value
            }
            return H2Server.Response(status: 200, action: number == 20 ? .goAway : .respond)
        }
        defer { server.stop() }
        let client = try HTTP2Client(configuration: .init(maxConnections: 1, caFile: certificates.certificate))
        defer { client.shutdown() }
        var statuses: [Int] = []
        for _ in 0..<60 {
            statuses.append((try? await client.send(url: "https://127.0.0.1:\(server.port)/x", headers: [:], body: Data("{}".utf8)).status) ?? -1)
        }
        #expect(statuses.filter { $0 == 200 }.count >= 59)
        #expect(server.connectionsAccepted >= 2)
    }
}
