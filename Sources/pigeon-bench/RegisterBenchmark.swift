import Foundation

/// Drives `POST /api/v1/devices/register` for new devices (unique user and device ids, so every
/// call asks the bank proxy and subscribes) from `clients` keep-alive connections, closed loop.
struct RegisterBenchmark {
    var host: String
    var port: UInt16
    var clients: Int
    var seconds: Double
    var runId: String

    func run() throws -> IngestBenchmark.Result {
        let (host, port, runId) = (host, port, runId)
        let token = String(repeating: "ab", count: 32)
        return try LoadRun.run(host: host, port: port, clients: clients, seconds: seconds) { client, clientIndex, _, deadline in
            var result = LoadRun.ThreadResult()
            while Date() < deadline {
                let body = #"{"bankClientId":"bank","userId":"\#(runId)-\#(clientIndex)-\#(result.sent)","deviceId":"device","platform":"IOS","pushToken":"\#(token)"}"#
                let request = Array("POST /api/v1/devices/register HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
                let began = Date()
                let (status, _) = try client.exchange(request)
                result.latencies.append(Date().timeIntervalSince(began))
                result.sent += 1
                if status != 200 { result.failed += 1 }
            }
            return result
        }
    }
}
