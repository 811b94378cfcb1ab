import Foundation
import Synchronization

/// Runs `clients` threads, each with its own keep-alive connection, and adds up what each
/// reports. A thread's `work` loops until `deadline` and returns its latencies and counts.
enum LoadRun {
    struct ThreadResult {
        var latencies: [Double] = []
        var sent = 0
        var failed = 0
    }

    static func run(host: String, port: UInt16, clients: Int, seconds: Double, sources: [String] = [],
                    work: @escaping @Sendable (_ client: LoadClient, _ clientIndex: Int, _ start: Date, _ deadline: Date) throws -> ThreadResult) throws -> IngestBenchmark.Result {
        struct Totals {
            var result = ThreadResult()
            var failure: (any Error)?
        }
        let totals = Mutex(Totals())
        let start = Date()
        let deadline = start.addingTimeInterval(seconds)
        let group = DispatchGroup()
        for clientIndex in 0..<clients {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                do {
                    let source = sources.isEmpty ? nil : sources[clientIndex % sources.count]
                    let result = try work(try LoadClient(host: host, port: port, source: source), clientIndex, start, deadline)
                    totals.withLock {
                        $0.result.latencies += result.latencies
                        $0.result.sent += result.sent
                        $0.result.failed += result.failed
                    }
                } catch {
                    totals.withLock { $0.failure = error }
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        let elapsed = Date().timeIntervalSince(start)
        return try totals.withLock { totals in
            if let failure = totals.failure { throw failure }
            return IngestBenchmark.Result(requests: totals.result.sent, errors: totals.result.failed, elapsed: elapsed, latencies: totals.result.latencies)
        }
    }

    /// Each client sends the request `request(clientIndex, sent)` builds and waits for its answer,
    /// again and again until the deadline (closed loop); an answer other than 200 counts as failed.
    static func closedLoop(host: String, port: UInt16, clients: Int, seconds: Double, sources: [String] = [],
                           request: @escaping @Sendable (_ clientIndex: Int, _ sent: Int) -> [UInt8]) throws -> IngestBenchmark.Result {
        try run(host: host, port: port, clients: clients, seconds: seconds, sources: sources) { client, clientIndex, _, deadline in
            var result = ThreadResult()
            while Date() < deadline {
                let began = Date()
                let (status, _) = try client.exchange(request(clientIndex, result.sent))
                result.latencies.append(Date().timeIntervalSince(began))
                result.sent += 1
                if status != 200 { result.failed += 1 }
            }
            return result
        }
    }
}
