import Foundation

/// Drives the Wallet side of the gateway for bench/passes.sh, `count` passes spread over
/// `clients` keep-alive connections, each working through its share as fast as answers come:
/// - `update`: the bank's `updatePass` for serials 1…count (the same signed pass each time);
/// - `fetch`: each Wallet asks for its changed serials, then downloads its pass (200);
/// - `fetch304`: each Wallet downloads with `If-Modified-Since` of now (304).
/// Prints `requests seconds per_second errors`.
struct PassBenchmark {
    static let passType = "pass.com.example.bench"

    var host: String
    var port: UInt16
    var clients: Int
    var count: Int

    /// The token each bench pass is stored with (bench/passes.sh stores its SHA-256).
    static func token(_ serial: Int) -> String { "bench-pass-token-\(serial)" }

    func update(passBase64: String) throws -> IngestBenchmark.Result {
        let head = "POST /pigeon/services/SBIInboundWebService HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"\"\r\nContent-Length: "
        return try each { serial in
            let body = """
                <soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/">\
                <soapenv:Body><inb:updatePass><passTypeIdentifier>\(Self.passType)</passTypeIdentifier><serialNumber>s-\(serial)</serialNumber>\
                <authenticationToken>\(Self.token(serial))</authenticationToken><pass>\(passBase64)</pass></inb:updatePass></soapenv:Body></soapenv:Envelope>
                """
            return [Array((head + "\(body.utf8.count)\r\n\r\n" + body).utf8)]
        }
    }

    func fetch(ifModifiedSince: String?) throws -> IngestBenchmark.Result {
        let host = "Host: \(host):\(port)\r\n"
        return try each { serial in
            var requests: [[UInt8]] = []
            if ifModifiedSince == nil {
                requests.append(Array("GET /passkit/v1/devices/dev-\(serial)/registrations/\(Self.passType)?passesUpdatedSince=0 HTTP/1.1\r\n\(host)\r\n".utf8))
            }
            let conditional = ifModifiedSince.map { "If-Modified-Since: \($0)\r\n" } ?? ""
            requests.append(Array("GET /passkit/v1/passes/\(Self.passType)/s-\(serial) HTTP/1.1\r\n\(host)Authorization: ApplePass \(Self.token(serial))\r\n\(conditional)\r\n".utf8))
            return requests
        }
    }

    /// Sends each serial's requests in order; the serial counts once, failed unless every
    /// answer was 200 (or 304 for a conditional download).
    private func each(_ requests: @escaping @Sendable (Int) -> [[UInt8]]) throws -> IngestBenchmark.Result {
        let (clients, count) = (clients, count)
        return try LoadRun.run(host: host, port: port, clients: clients, seconds: 86_400) { client, clientIndex, _, _ in
            var result = LoadRun.ThreadResult()
            var serial = clientIndex + 1
            while serial <= count {
                let began = Date()
                var ok = true
                for request in requests(serial) {
                    let (status, _) = try client.exchange(request)
                    if status != 200 && status != 304 { ok = false }
                }
                result.latencies.append(Date().timeIntervalSince(began))
                result.sent += 1
                if !ok { result.failed += 1 }
                serial += clients
            }
            return result
        }
    }
}
