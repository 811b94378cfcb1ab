import Foundation
import Synchronization

/// Drives `POST /api/v1/devices/register` for new devices (unique user and device ids, so every
/// call asks the bank proxy and subscribes) from `clients` keep-alive connections, closed loop.
struct RegisterBenchmark {
    var host: String
    var port: UInt16
    var clients: Int
    var seconds: Double
    var runId: String

    func run() throws -> IngestBenchmark.Result {
        let (host, port, runId, deadline) = (host, port, runId, Date().addingTimeInterval(seconds))
        let token = String(repeating: "ab", count: 32)
        struct Totals {
            var latencies: [Double] = []
            var requests = 0
            var errors = 0
            var failure: (any Error)?
        }
        let totals = Mutex(Totals())
        let start = Date()
        let group = DispatchGroup()
        for clientIndex in 0..<clients {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                var latencies: [Double] = []
                var sent = 0, failed = 0
                do {
                    let client = try LoadClient(host: host, port: port)
                    while Date() < deadline {
                        let body = #"{"bankClientId":"bank","userId":"\#(runId)-\#(clientIndex)-\#(sent)","deviceId":"device","platform":"IOS","pushToken":"\#(token)"}"#
                        let request = Array("POST /api/v1/devices/register HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
                        let began = Date()
                        let (status, _) = try client.exchange(request)
                        latencies.append(Date().timeIntervalSince(began))
                        sent += 1
                        if status != 200 { failed += 1 }
                    }
                } catch {
                    totals.withLock { $0.failure = error }
                }
                totals.withLock {
                    $0.latencies += latencies
                    $0.requests += sent
                    $0.errors += failed
                }
            }
            thread.start()
        }
        group.wait()
        let result = totals.withLock { $0 }
        if let failure = result.failure { throw failure }
        return IngestBenchmark.Result(requests: result.requests, errors: result.errors, elapsed: Date().timeIntervalSince(start), latencies: result.latencies)
    }
}
