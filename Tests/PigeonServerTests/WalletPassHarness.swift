import Foundation
@testable import PigeonConfiguration
import PigeonCore
@testable import PigeonHTTP
@testable import PigeonServer
import PigeonSimulator
import PigeonTestSupport
@testable import PigeonWallet
import Testing

/// Wallet passes end to end (CONTRACT §7): a gateway with its simulator (APNs and the simulated
/// Wallets) and bank stub, the bank's SOAP calls, and the web service called as Wallet does.
struct WalletPassHarness {
    static let passType = "pass.com.example.bank.card"
    static let token = "wallet-auth-token-0123456789"

    let flow: DeviceFlowHarness
    var gateway: GatewayHarness { flow.gateway }
    var simulator: Simulator { flow.simulator.simulator }
    var webServiceURL: String { gateway.baseURL + "/passkit" }

    init(_ adjust: @escaping @Sendable (inout GatewayConfiguration) -> Void = { _ in }) async throws {
        flow = try await DeviceFlowHarness(adjust)
    }

    func stop() async { await flow.stop() }

    /// A `.pkpass`-shaped archive (pass.json, manifest.json, signature) whose pass.json says `text`.
    static func pkpass(serial: String, text: String = "balance 100") -> Data {
        var zip = ZIPWriter()
        zip.add("pass.json", Data(#"{"passTypeIdentifier":"\#(passType)","serialNumber":"\#(serial)","description":"\#(text)"}"#.utf8))
        zip.add("manifest.json", Data("{}".utf8))
        zip.add("signature", Data([0x30, 0x80]))
        return zip.finish()
    }

    /// `updatePass`: the SOAP reply.
    func updatePass(serial: String, token: String = Self.token, pass: Data? = nil, type: String = Self.passType) async throws -> GatewayHarness.Reply {
        let content = (pass ?? Self.pkpass(serial: serial)).base64EncodedString()
        return try await gateway.soap("""
            <inb:updatePass><passTypeIdentifier>\(type)</passTypeIdentifier><serialNumber>\(serial)</serialNumber>\
            <authenticationToken>\(token)</authenticationToken><pass>\(content)</pass></inb:updatePass>
            """)
    }

    /// `getPassStatus`: the version and each device's state.
    func passStatus(serial: String) async throws -> (version: Int?, devices: [String: String]) {
        let reply = try await gateway.soap("""
            <inb:getPassStatus><passTypeIdentifier>\(Self.passType)</passTypeIdentifier><serialNumber>\(serial)</serialNumber></inb:getPassStatus>
            """)
        let text = reply.text
        let version = Self.firstMatch(#"<version>(\d+)</version>"#, in: text).flatMap { Int($0[0]) }
        var devices: [String: String] = [:]
        for match in Self.allMatches(#"<entry><key>([^<]*)</key><value>([^<]*)</value></entry>"#, in: text) { devices[match[0]] = match[1] }
        return (version, devices)
    }

    /// A web-service call (curl: URLSession stalls on 401 answers), with the response headers.
    func call(_ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:]) async throws -> DeviceFlowHarness.Answer {
        var arguments = ["-s", "-S", "-i", "-X", method, "--max-time", "30"]
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        if body != nil { arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
        arguments.append(webServiceURL + path)
        return try await DeviceFlowHarness.curlWithHeaders(arguments, input: body)
    }

    static func applePass(_ token: String = Self.token) -> [String: String] { ["Authorization": "ApplePass \(token)"] }

    static func registration(pushToken: String) -> Data { Data(#"{"pushToken":"\#(pushToken)"}"#.utf8) }

    static func firstMatch(_ pattern: String, in text: String) -> [String]? {
        allMatches(pattern, in: text).first
    }

    static func allMatches(_ pattern: String, in text: String) -> [[String]] {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return expression.matches(in: text, range: range).map { match in
            (1..<match.numberOfRanges).compactMap { Range(match.range(at: $0), in: text).map { String(text[$0]) } }
        }
    }
}
