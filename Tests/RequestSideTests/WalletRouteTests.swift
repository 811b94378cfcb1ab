import Foundation
import PigeonCore
import PigeonTestSupport
import PigeonWallet
import Testing

/// Apple's PassKit web service and the bank's `updatePass`/`getPassStatus` (CONTRACT §7) through
/// the router on an in-memory Wallet store.
@Suite("Wallet passes through the router", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct WalletRouteTests {
    static let passType = "pass.com.example.bank.card"
    static let token = "wallet-auth-token-0123456789"
    static let pushToken = String(repeating: "c0", count: 32)

    static func pkpass(serial: String, text: String = "balance 100") -> Data {
        var zip = ZIPWriter()
        zip.add("pass.json", Data(#"{"passTypeIdentifier":"\#(passType)","serialNumber":"\#(serial)","description":"\#(text)"}"#.utf8))
        zip.add("manifest.json", Data("{}".utf8))
        zip.add("signature", Data([0x30, 0x80]))
        return zip.finish()
    }

    static func updatePass(serial: String, token: String = Self.token, pass: Data? = nil) -> String {
        "<inb:updatePass><passTypeIdentifier>\(passType)</passTypeIdentifier><serialNumber>\(serial)</serialNumber>"
            + "<authenticationToken>\(token)</authenticationToken><pass>\((pass ?? pkpass(serial: serial)).base64EncodedString())</pass></inb:updatePass>"
    }

    static func applePass(_ token: String = Self.token) -> [String: String] { ["authorization": "ApplePass \(token)"] }
    static let registration = #"{"pushToken":"\#(pushToken)"}"#

    func passKit(_ harness: RouterHarness, _ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:]) async -> RouterHarness.Answer {
        await harness.call(method, "/passkit" + path, body: body, headers: headers)
    }

    @Test("every web-service call answers with Apple's status codes; a wrong or missing ApplePass token changes nothing")
    func webService() async throws {
        let harness = try RouterHarness()
        let path = "/v1/devices/device-1/registrations/\(Self.passType)/card-1"
        #expect(await passKit(harness, "POST", path, body: Self.registration, headers: Self.applePass()).status == 401, "no pass stored yet")
        let stored = await harness.soap(Self.updatePass(serial: "card-1"))
        #expect(stored.text.contains("<status>OK</status>") && stored.text.contains("<version>1</version>"), "\(stored.text)")

        #expect(await passKit(harness, "POST", path, body: Self.registration).status == 401)
        #expect(await passKit(harness, "POST", path, body: Self.registration, headers: Self.applePass("wrong-token-0123456789")).status == 401)
        #expect(await passKit(harness, "POST", path, body: Self.registration, headers: Self.applePass()).status == 201)
        #expect(await passKit(harness, "POST", path, body: Self.registration, headers: Self.applePass()).status == 200)

        let all = await passKit(harness, "GET", "/v1/devices/device-1/registrations/\(Self.passType)")
        #expect(all.status == 200)
        let listed = try #require(try JSONSerialization.jsonObject(with: all.body) as? [String: Any])
        #expect(listed["serialNumbers"] as? [String] == ["card-1"])
        let tag = try #require(listed["lastUpdated"] as? String)
        #expect(await passKit(harness, "GET", "/v1/devices/device-1/registrations/\(Self.passType)?passesUpdatedSince=\(tag)").status == 204)
        #expect(await passKit(harness, "GET", "/v1/devices/unknown-device/registrations/\(Self.passType)").status == 204)

        #expect(await passKit(harness, "GET", "/v1/passes/\(Self.passType)/card-1").status == 401)
        let pass = await passKit(harness, "GET", "/v1/passes/\(Self.passType)/card-1", headers: Self.applePass())
        #expect(pass.status == 200)
        #expect(pass.header("Content-Type") == "application/vnd.apple.pkpass")
        #expect(pass.body == Self.pkpass(serial: "card-1"))
        let lastModified = try #require(pass.header("Last-Modified"))
        #expect(HTTPDate.parse(lastModified) != nil)
        let notModified = await passKit(harness, "GET", "/v1/passes/\(Self.passType)/card-1",
                                        headers: Self.applePass().merging(["if-modified-since": lastModified]) { a, _ in a })
        #expect(notModified.status == 304)

        _ = await harness.soap(Self.updatePass(serial: "card-1", pass: Self.pkpass(serial: "card-1", text: "balance 90")))
        let newer = await passKit(harness, "GET", "/v1/passes/\(Self.passType)/card-1",
                                  headers: Self.applePass().merging(["if-modified-since": lastModified]) { a, _ in a })
        #expect(newer.status == 200)
        #expect(newer.body == Self.pkpass(serial: "card-1", text: "balance 90"))

        #expect(await passKit(harness, "DELETE", path, headers: Self.applePass("wrong-token-0123456789")).status == 401)
        #expect(await passKit(harness, "DELETE", path, headers: Self.applePass()).status == 200)
        #expect(await passKit(harness, "GET", "/v1/devices/device-1/registrations/\(Self.passType)").status == 204)
    }

    @Test("Wallet's logs: accepted and bounded, 413 over 4 KiB, 429 past ten calls a minute from an address")
    func logs() async throws {
        let harness = try RouterHarness()
        let logs = #"{"logs":["Web service error for pass.com.example.bank.card: forged\r\nline"]}"#
        #expect(await passKit(harness, "POST", "/v1/log", body: logs).status == 200)
        #expect(await passKit(harness, "POST", "/v1/log", body: #"{"logs":["\#(String(repeating: "x", count: 5000))"]}"#).status == 413)
        var statuses: [Int] = []
        for _ in 0..<10 { statuses.append(await passKit(harness, "POST", "/v1/log", body: logs).status) }
        #expect(statuses.filter { $0 == 200 }.count == 9 && statuses.last == 429, "\(statuses)")
    }

    @Test("hostile web-service input gets a clear 4xx and registers nothing", arguments: [
        ("bad device id", "/v1/devices/dev%0Aice/registrations/\(passType)/card-1", registration, 400),
        ("device id too long", "/v1/devices/\(String(repeating: "d", count: 200))/registrations/\(passType)/card-1", registration, 400),
        ("push token not hex", "/v1/devices/device-1/registrations/\(passType)/card-1", #"{"pushToken":"not-a-token"}"#, 400),
        ("body not JSON", "/v1/devices/device-1/registrations/\(passType)/card-1", "pushToken=1", 400),
        ("body a list", "/v1/devices/device-1/registrations/\(passType)/card-1", "[1,2]", 400),
        ("body too large", "/v1/devices/device-1/registrations/\(passType)/card-1", "{\"pushToken\":\"" + String(repeating: "a", count: 10_000) + "\"}", 413),
        ("unknown call", "/v1/devices/device-1", "", 404),
    ])
    func hostile(name: String, path: String, body: String, status: Int) async throws {
        let harness = try RouterHarness()
        _ = await harness.soap(Self.updatePass(serial: "card-1"))
        let answer = await passKit(harness, "POST", path, body: body, headers: Self.applePass())
        #expect(answer.status == status, "\(name): \(answer.status) \(answer.text)")
        #expect(await passKit(harness, "GET", "/v1/devices/device-1/registrations/\(Self.passType)").status == 204)
    }

    @Test("a pass at registrationsPerPass gives up its oldest registration for the newcomer")
    func registrationsPerPass() async throws {
        let harness = try RouterHarness { $0.passes.registrationsPerPass = 2 }
        _ = await harness.soap(Self.updatePass(serial: "card-1"))
        for device in ["device-1", "device-2", "owners-new-phone"] {
            #expect(await passKit(harness, "POST", "/v1/devices/\(device)/registrations/\(Self.passType)/card-1",
                                  body: Self.registration, headers: Self.applePass()).status == 201)
        }
        let status = await harness.soap("<inb:getPassStatus><passTypeIdentifier>\(Self.passType)</passTypeIdentifier><serialNumber>card-1</serialNumber></inb:getPassStatus>")
        #expect(!status.text.contains("<key>device-1</key>"), "\(status.text)")
        #expect(status.text.contains("<key>owners-new-phone</key><value>REGISTERED</value>"), "\(status.text)")
    }

    @Test("updatePass refuses what is not a pass, a changed token or a bad identifier with a fault naming it; nothing is stored")
    func updatePassFaults() async throws {
        let harness = try RouterHarness()
        var noSignature = ZIPWriter()
        noSignature.add("pass.json", Data("{}".utf8))
        noSignature.add("manifest.json", Data("{}".utf8))
        let cases: [(String, String, String)] = [
            ("not base64", "<inb:updatePass><passTypeIdentifier>\(Self.passType)</passTypeIdentifier><serialNumber>c</serialNumber><authenticationToken>\(Self.token)</authenticationToken><pass>@@@</pass></inb:updatePass>", "base64Binary"),
            ("not a ZIP", Self.updatePass(serial: "c", pass: Data("hello, this is not a pass".utf8)), "not a ZIP archive"),
            ("no signature", Self.updatePass(serial: "c", pass: noSignature.finish()), "has no signature"),
            ("serial with a slash", Self.updatePass(serial: "a/b"), "serialNumber"),
            ("short token", Self.updatePass(serial: "c", token: "short"), "at least 16"),
            ("missing pass", "<inb:updatePass><passTypeIdentifier>\(Self.passType)</passTypeIdentifier><serialNumber>c</serialNumber><authenticationToken>\(Self.token)</authenticationToken></inb:updatePass>", "'pass'"),
        ]
        let statusOfC = "<inb:getPassStatus><passTypeIdentifier>\(Self.passType)</passTypeIdentifier><serialNumber>c</serialNumber></inb:getPassStatus>"
        for (name, operation, fragment) in cases {
            let reply = await harness.soap(operation)
            #expect(reply.status == 500 && reply.text.contains("Fault") && reply.text.contains(fragment), "\(name): \(reply.text)")
        }
        #expect(await harness.soap(statusOfC).text.contains("<status>ENTITY_NOT_FOUND</status>"))
        _ = await harness.soap(Self.updatePass(serial: "c"))
        let changed = await harness.soap(Self.updatePass(serial: "c", token: "another-token-0123456789"))
        #expect(changed.status == 500 && changed.text.contains("differs"), "\(changed.text)")
        #expect(await harness.soap(statusOfC).text.contains("<version>1</version>"))
    }
}
