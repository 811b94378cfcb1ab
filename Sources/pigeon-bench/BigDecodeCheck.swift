import BankContract
import Foundation
import SOAPCodec

/// Decodes one sendNotification of `recipients` users and encodes its answer, printing the
/// peak resident memory after each step: what a big send costs the gateway before the database.
enum BigDecodeCheck {
    static func peakMegabytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
    }

    static func document(recipients: Int) -> Data {
        var text = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" "
            + "xmlns:inb=\"http://inbound.sbi.pigeon.idamobile.com/\"><soapenv:Body><inb:sendNotification><notification>"
            + "<id>big</id><pushContent><text>Hello</text><type>UNIVERSAL</type></pushContent>"
        text.reserveCapacity(recipients * 40 + 400)
        for index in 1...recipients { text += "<recipients>big-\(index)</recipients>" }
        text += "<timeout>86400</timeout></notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>"
        return Data(text.utf8)
    }

    static func run(recipients: Int) throws {
        let body = document(recipients: recipients)
        print("document \(body.count / 1_048_576) MiB: peak \(peakMegabytes()) MiB")
        let codec = SOAPCodec(service: InboundService.description, limits: .init(forDocumentsUpTo: 1 << 30))
        var started = Date()
        let request = try codec.decodeRequest(body, contentType: nil)
        print(String(format: "decoded in %.2f s: peak %d MiB", Date().timeIntervalSince(started), peakMegabytes()))
        started = Date()
        let message = try NotificationMessage(sendNotification: request)
        print(String(format: "message of %d recipients in %.2f s: peak %d MiB", message.recipients.count, Date().timeIntervalSince(started), peakMegabytes()))
        started = Date()
        let result = InboundResult(status: .ok).with(deliveryStatus: message.recipients.map { ($0, "QUEUED") })
        let answer = codec.encodeResponse(request.operation, result: result.record, version: request.version)
        print(String(format: "answer of %d MiB in %.2f s: peak %d MiB", answer.count / 1_048_576, Date().timeIntervalSince(started), peakMegabytes()))
    }
}
