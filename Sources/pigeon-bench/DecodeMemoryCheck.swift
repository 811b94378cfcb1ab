import BankContract
import Foundation
import SOAPCodec

/// Decodes the same valid and malformed requests many times and reports resident memory after
/// each round: a leak per request shows as steady growth.
enum DecodeMemoryCheck {
    static func residentKilobytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    static func run(rounds: Int, perRound: Int) {
        let codec = SOAPCodec(service: InboundService.description)
        let documents: [(String, Data)] = [
            ("valid", Data("<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><getDeliveryStatus><id>x</id></getDeliveryStatus></s:Body></s:Envelope>".utf8)),
            ("malformed", Data("<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><x></s:Body></s:Envelope>".utf8)),
            ("undefined-entity", Data("<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body>&xxe;</s:Body></s:Envelope>".utf8)),
        ]
        for (name, document) in documents {
            var line = "\(name):"
            for _ in 0..<rounds {
                for _ in 0..<perRound { _ = try? codec.decodeRequest(document, contentType: nil) }
                line += " \(residentKilobytes())"
            }
            print(line + " kB after each \(perRound) decodes")
        }
    }
}
