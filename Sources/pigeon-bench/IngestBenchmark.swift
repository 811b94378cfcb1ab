import Foundation
import Synchronization

/// Drives sendNotification with unique ids from `clients` keep-alive connections, closed loop
/// (as fast as answers come) or open loop at a fixed total `rate`, where latency is measured from
/// each request's scheduled time so a stall is not hidden (no coordinated omission).
struct IngestBenchmark {
    var host: String
    var port: UInt16
    var clients: Int
    var recipients: Int
    var seconds: Double
    var rate: Double?
    var runId: String

    struct Result {
        var requests: Int
        var errors: Int
        var elapsed: Double
        var latencies: [Double]

        var throughput: Double { Double(requests) / elapsed }
        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return 0 }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
    }

    func request(id: String, users: [String]) -> [UInt8] {
        var body = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:inb=\"http://inbound.sbi.pigeon.idamobile.com/\"><soapenv:Body><inb:sendNotification><notification>"
        body += "<id>\(id)</id><pushContent><badge>1</badge><details><entry><key>target</key><value>4242</value></entry></details>"
        body += "<sound>default</sound><text>Код подтверждения платежа: 4242</text><type>PIN_CODE</type></pushContent>"
        for user in users { body += "<recipients>\(user)</recipients>" }
        body += "<timeout>300</timeout></notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>"
        let bytes = Array(body.utf8)
        let head = "POST /pigeon/services/SBIInboundWebService HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"\"\r\nContent-Length: \(bytes.count)\r\n\r\n"
        return Array(head.utf8) + bytes
    }

    func run() throws -> Result {
        let (host, port, clients, recipients, rate, runId) = (host, port, clients, recipients, rate, runId)
        let request = self.request
        struct Totals {
            var latencies: [Double] = []
            var requests = 0
            var errors = 0
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
                var latencies: [Double] = []
                var sent = 0, failed = 0
                do {
                    let client = try LoadClient(host: host, port: port)
                    let interval = rate.map { Double(clients) / $0 }
                    var scheduled = start.addingTimeInterval(Double(clientIndex) * (interval ?? 0) / Double(clients))
                    while Date() < deadline {
                        if let interval {
                            let wait = scheduled.timeIntervalSinceNow
                            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                        }
                        let began = interval == nil ? Date() : scheduled
                        let users = (0..<recipients).map { "bench-user-\((clientIndex * 7919 + sent * 31 + $0) % 20000)" }
                        let (status, _) = try client.exchange(request("\(runId)-\(clientIndex)-\(sent)", users))
                        latencies.append(Date().timeIntervalSince(began))
                        sent += 1
                        if status != 200 { failed += 1 }
                        if let interval { scheduled = scheduled.addingTimeInterval(interval) }
                    }
                } catch {
                    totals.withLock { $0.failure = error }
                }
                totals.withLock {
                    $0.latencies.append(contentsOf: latencies)
                    $0.requests += sent
                    $0.errors += failed
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        let elapsed = Date().timeIntervalSince(start)
        return try totals.withLock { totals in
            if let failure = totals.failure { throw failure }
            return Result(requests: totals.requests, errors: totals.errors, elapsed: elapsed, latencies: totals.latencies)
        }
    }
}
