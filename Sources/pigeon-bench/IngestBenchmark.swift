import Foundation

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
        /// By nearest rank, as bench/codes.sh: the smallest latency with at least `p` of them at
        /// or below it (of 100, p99 is the 99th).
        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return 0 }
            let sorted = latencies.sorted()
            let rank = Int((Double(sorted.count) * p).rounded(.up))
            return sorted[min(sorted.count - 1, max(0, rank - 1))]
        }
    }

    /// The request bytes around the id and the recipients, built once.
    struct Template {
        let head: [UInt8]
        let beforeId: [UInt8]
        let afterId: [UInt8]
        let recipientOpen: [UInt8] = Array("<recipients>".utf8)
        let recipientClose: [UInt8] = Array("</recipients>".utf8)
        let tail: [UInt8]

        init(host: String, port: UInt16) {
            head = Array("POST /pigeon/services/SBIInboundWebService HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"\"\r\nContent-Length: ".utf8)
            beforeId = Array("<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:inb=\"http://inbound.sbi.pigeon.idamobile.com/\"><soapenv:Body><inb:sendNotification><notification><id>".utf8)
            afterId = Array("</id><pushContent><badge>1</badge><details><entry><key>target</key><value>4242</value></entry></details><sound>default</sound><text>Код подтверждения платежа: 4242</text><type>PIN_CODE</type></pushContent>".utf8)
            tail = Array("<timeout>300</timeout></notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>".utf8)
        }

        func request(id: String, users: some Sequence<Int>) -> [UInt8] {
            var body = beforeId
            body.reserveCapacity(1024)
            body.append(contentsOf: id.utf8)
            body.append(contentsOf: afterId)
            for user in users {
                body.append(contentsOf: recipientOpen)
                body.append(contentsOf: "bench-user-".utf8)
                body.append(contentsOf: String(user).utf8)
                body.append(contentsOf: recipientClose)
            }
            body.append(contentsOf: tail)
            return head + Array("\(body.count)\r\n\r\n".utf8) + body
        }
    }

    func run() throws -> Result {
        let (clients, recipients, rate, runId) = (clients, recipients, rate, runId)
        let template = Template(host: host, port: port)
        return try LoadRun.run(host: host, port: port, clients: clients, seconds: seconds) { client, clientIndex, start, deadline in
            var result = LoadRun.ThreadResult()
            let interval = rate.map { Double(clients) / $0 }
            var scheduled = start.addingTimeInterval(Double(clientIndex) * (interval ?? 0) / Double(clients))
            while Date() < deadline {
                if interval != nil {
                    let wait = scheduled.timeIntervalSinceNow
                    if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                }
                let began = interval == nil ? Date() : scheduled
                let sent = result.sent
                let users = (0..<recipients).lazy.map { (clientIndex * 7919 + sent * 31 + $0) % 20000 }
                let (status, _) = try client.exchange(template.request(id: "\(runId)-\(clientIndex)-\(sent)", users: users))
                result.latencies.append(Date().timeIntervalSince(began))
                result.sent += 1
                if status != 200 { result.failed += 1 }
                if let interval { scheduled = scheduled.addingTimeInterval(interval) }
            }
            return result
        }
    }
}
