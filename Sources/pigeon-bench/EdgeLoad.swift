import Foundation
import Synchronization

/// The misbehaving and idle clients of `bench/edge.sh`, each on a thread of its own until a
/// deadline: phones holding idle keep-alive connections, and a slow client trickling requests.
enum EdgeLoad {
    /// Opens `connections` keep-alive connections spread over `sources` (one `GET /health` each,
    /// so they are real HTTP connections), then holds them idle until `seconds` passed, opening
    /// a new one for each the server closes. Returns (held at the end, reopened).
    static func hold(host: String, port: UInt16, connections: Int, sources: [String], seconds: Double) throws -> (held: Int, reopened: Int) {
        let request = Array("GET /health HTTP/1.1\r\nHost: \(host)\r\n\r\n".utf8)
        func open(_ index: Int) throws -> LoadClient {
            let client = try LoadClient(host: host, port: port, source: sources[index % sources.count])
            _ = try client.exchange(request)
            return client
        }
        var clients = try (0..<connections).map(open)
        FileHandle.standardError.write(Data("pigeon-bench hold: \(connections) connections open\n".utf8))
        let deadline = Date().addingTimeInterval(seconds)
        var reopened = 0
        while Date() < deadline {
            for index in clients.indices where clients[index].isClosed {
                if let client = try? open(index) {
                    clients[index] = client
                    reopened += 1
                }
            }
            Thread.sleep(forTimeInterval: 1)
        }
        return (clients.filter { !$0.isClosed }.count, reopened)
    }

    /// `connections` clients from `source` that each send part of a request head and then one
    /// byte a second, never finishing; a connection the server closes is opened again. Returns
    /// how many the server closed.
    static func slowloris(host: String, port: UInt16, connections: Int, source: String, seconds: Double) -> Int {
        let head = Array("POST /api/v1/devices/register HTTP/1.1\r\nHost: \(host)\r\nX-Slow: ".utf8)
        var clients: [LoadClient?] = (0..<connections).map { _ in
            let client = try? LoadClient(host: host, port: port, source: source)
            _ = client?.sendRaw(head)
            return client
        }
        let deadline = Date().addingTimeInterval(seconds)
        var closed = 0
        while Date() < deadline {
            for index in clients.indices {
                if let client = clients[index], !client.isClosed, client.sendRaw([UInt8(ascii: "a")]) { continue }
                if clients[index] != nil { closed += 1 }
                let client = try? LoadClient(host: host, port: port, source: source)
                _ = client?.sendRaw(head)
                clients[index] = client
            }
            Thread.sleep(forTimeInterval: 1)
        }
        return closed
    }

    /// Keep-alive clients acknowledging `notification` as delivered, one per bearer token (one
    /// per line of `tokens`), spread over the `sources` addresses, closed loop.
    static func acknowledgements(host: String, port: UInt16, tokens: [String], notification: String, seconds: Double, sources: [String]) throws -> IngestBenchmark.Result {
        let requests = tokens.map {
            Array("POST /api/v1/notifications/\(notification)/delivered HTTP/1.1\r\nHost: \(host):\(port)\r\nAuthorization: Bearer \($0)\r\nContent-Length: 0\r\n\r\n".utf8)
        }
        return try LoadRun.closedLoop(host: host, port: port, clients: tokens.count, seconds: seconds, sources: sources) { clientIndex, _ in
            requests[clientIndex]
        }
    }
}
