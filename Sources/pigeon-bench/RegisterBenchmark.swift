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
        return try LoadRun.closedLoop(host: host, port: port, clients: clients, seconds: seconds) { clientIndex, sent in
            let body = #"{"bankClientId":"bank","userId":"\#(runId)-\#(clientIndex)-\#(sent)","deviceId":"device","platform":"IOS","pushToken":"\#(token)"}"#
            return Array("POST /api/v1/devices/register HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        }
    }
}
