import Foundation

/// getDeliveryStatus, closed loop from keep-alive clients, each asking for ids taken in turn
/// from a list (ids spread over the days kept, so lookups reach old partitions too).
enum StatusBenchmark {
    static func run(host: String, port: UInt16, clients: Int, seconds: Double, ids: [String]) throws -> IngestBenchmark.Result {
        let head = "POST /pigeon/services/SBIInboundWebService HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"\"\r\nContent-Length: "
        return try LoadRun.closedLoop(host: host, port: port, clients: clients, seconds: seconds) { clientIndex, sent in
            let id = ids.isEmpty ? "none" : ids[(clientIndex * 7919 + sent * 104_729) % ids.count]
            let body = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:inb=\"http://inbound.sbi.pigeon.idamobile.com/\"><soapenv:Body><inb:getDeliveryStatus><id>\(id)</id></inb:getDeliveryStatus></soapenv:Body></soapenv:Envelope>"
            return Array((head + "\(body.utf8.count)\r\n\r\n" + body).utf8)
        }
    }
}
