import Foundation
import PigeonCore
import PigeonBankStub
@testable import PigeonConfiguration
import PigeonDomain
@testable import PigeonHTTP
@testable import PigeonServer
import PigeonSimulator
import PigeonTestSupport
@testable import PigeonWallet
import Testing

/// Wallet passes end to end (CONTRACT §7): Apple's web service with its status codes, the bank's
/// updatePass/getPassStatus, update pushes on the pass type's topic, the simulated Wallets'
/// fetches, re-pushes, expiry and the bank's report.
@Suite("Wallet passes", .serialized, .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct WalletPassTests {
    typealias Harness = WalletPassHarness

    @Test("every web-service call answers with Apple's status codes; a wrong or missing ApplePass token changes nothing")
    func webService() async throws {
        let wallet = try await Harness()
        let pushToken = String(repeating: "c0", count: 32)
        let path = "/v1/devices/device-1/registrations/\(Harness.passType)/card-1"

        // Before the bank stored the pass, nothing can register for it.
        #expect(try await wallet.call("POST", path, body: Harness.registration(pushToken: pushToken), headers: Harness.applePass()).status == 401)
        let stored = try await wallet.updatePass(serial: "card-1")
        #expect(stored.status == 200 && stored.text.contains("<status>OK</status>") && stored.text.contains("<version>1</version>"), "\(stored.text)")

        #expect(try await wallet.call("POST", path, body: Harness.registration(pushToken: pushToken)).status == 401)
        #expect(try await wallet.call("POST", path, body: Harness.registration(pushToken: pushToken), headers: Harness.applePass("wrong-token-0123456789")).status == 401)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_registrations") == 0)
        #expect(try await wallet.call("POST", path, body: Harness.registration(pushToken: pushToken), headers: Harness.applePass()).status == 201)
        #expect(try await wallet.call("POST", path, body: Harness.registration(pushToken: pushToken), headers: Harness.applePass()).status == 200)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_registrations WHERE state = 'REGISTERED'") == 1)

        // The changed serials: all without a tag, none since the tag handed out.
        let all = try await wallet.call("GET", "/v1/devices/device-1/registrations/\(Harness.passType)")
        #expect(all.status == 200)
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(all.body.utf8)) as? [String: Any])
        #expect(listed["serialNumbers"] as? [String] == ["card-1"])
        let tag = try #require(listed["lastUpdated"] as? String)
        #expect(try await wallet.call("GET", "/v1/devices/device-1/registrations/\(Harness.passType)?passesUpdatedSince=\(tag)").status == 204)
        #expect(try await wallet.call("GET", "/v1/devices/unknown-device/registrations/\(Harness.passType)").status == 204)

        // The pass: 401 without its token, the archive with Last-Modified, then 304.
        #expect(try await wallet.call("GET", "/v1/passes/\(Harness.passType)/card-1").status == 401)
        #expect(try await wallet.call("GET", "/v1/passes/\(Harness.passType)/card-1", headers: Harness.applePass("wrong-token-0123456789")).status == 401)
        let pass = try await wallet.call("GET", "/v1/passes/\(Harness.passType)/card-1", headers: Harness.applePass())
        #expect(pass.status == 200)
        #expect(pass.headers["content-type"] == "application/vnd.apple.pkpass")
        #expect(pass.bytes == Harness.pkpass(serial: "card-1"))
        let lastModified = try #require(pass.headers["last-modified"])
        #expect(HTTPDate.parse(lastModified) != nil, "\(lastModified)")
        let notModified = try await wallet.call("GET", "/v1/passes/\(Harness.passType)/card-1",
                                                headers: Harness.applePass().merging(["If-Modified-Since": lastModified]) { a, _ in a })
        #expect(notModified.status == 304)
        #expect(notModified.headers["last-modified"] == lastModified)
        #expect(try await wallet.passStatus(serial: "card-1").devices == ["device-1": "FETCHED"])

        // A new version is newer than the device's copy, by at least a second.
        _ = try await wallet.updatePass(serial: "card-1", pass: Harness.pkpass(serial: "card-1", text: "balance 90"))
        let newer = try await wallet.call("GET", "/v1/passes/\(Harness.passType)/card-1",
                                          headers: Harness.applePass().merging(["If-Modified-Since": lastModified]) { a, _ in a })
        #expect(newer.status == 200)
        #expect(newer.bytes == Harness.pkpass(serial: "card-1", text: "balance 90"))
        let newerModified = try #require(newer.headers["last-modified"].flatMap(HTTPDate.parse))
        #expect(newerModified > (HTTPDate.parse(lastModified) ?? .distantFuture))

        // Logs go to the gateway's log, escaped and bounded, and are not stored: anyone may call
        // the endpoint. Bodies over 4 KiB are refused; past ten calls a minute from an address, 429.
        let logs = Data(#"{"logs":["Web service error for pass.com.example.bank.card (https://x/passkit): Response to 'What changed?' request included 1 serial numbers but the lastUpdated tag (5) remained the same.\r\nforged line"]}"#.utf8)
        #expect(try await wallet.call("POST", "/v1/log", body: logs).status == 200)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_logs") == 0)
        #expect(try await wallet.call("POST", "/v1/log", body: Data(#"{"logs":["\#(String(repeating: "x", count: 5000))"]}"#.utf8)).status == 413)
        var statuses: [Int] = []
        for _ in 0..<10 { statuses.append(try await wallet.call("POST", "/v1/log", body: logs).status) }
        #expect(statuses.filter { $0 == 200 }.count == 9 && statuses.last == 429, "\(statuses)")

        // Unregistering needs the token too.
        #expect(try await wallet.call("DELETE", path, headers: Harness.applePass("wrong-token-0123456789")).status == 401)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_registrations") == 1)
        #expect(try await wallet.call("DELETE", path, headers: Harness.applePass()).status == 200)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_registrations") == 0)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_devices") == 0)
        await wallet.stop()
    }

    @Test("hostile web-service input gets a clear 4xx and stores nothing")
    func hostileInput() async throws {
        let wallet = try await Harness { $0.passes.registrationsPerPass = 2 }
        _ = try await wallet.updatePass(serial: "card-1")
        let pushToken = String(repeating: "c0", count: 32)
        let base = "/v1/devices/device-1/registrations/\(Harness.passType)"
        let cases: [(String, String, Data?, Int)] = [
            ("bad device id", "/v1/devices/dev%0Aice/registrations/\(Harness.passType)/card-1", Harness.registration(pushToken: pushToken), 400),
            ("device id too long", "/v1/devices/\(String(repeating: "d", count: 200))/registrations/\(Harness.passType)/card-1", Harness.registration(pushToken: pushToken), 400),
            ("push token not hex", base + "/card-1", Harness.registration(pushToken: "not-a-token"), 400),
            ("body not JSON", base + "/card-1", Data("pushToken=1".utf8), 400),
            ("body a list", base + "/card-1", Data("[1,2]".utf8), 400),
            ("body too large", base + "/card-1", Data(("{\"pushToken\":\"" + String(repeating: "a", count: 10_000) + "\"}").utf8), 413),
            ("unknown call", "/v1/devices/device-1", nil, 404),
        ]
        for (name, path, body, status) in cases {
            let answer = try await wallet.call("POST", path, body: body, headers: Harness.applePass())
            #expect(answer.status == status, "\(name): \(answer.status) \(answer.body)")
        }
        #expect(try await wallet.call("PUT", base + "/card-1", body: Harness.registration(pushToken: pushToken), headers: Harness.applePass()).status == 405)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_registrations") + (try await wallet.flow.count("SELECT count(*) FROM pass_devices")) == 0)

        // Registrations per pass are bounded: copies of the pass file fill its two slots, and the
        // owner's new phone still registers — the oldest registration goes, not the newcomer.
        for index in 1...2 {
            #expect(try await wallet.call("POST", "/v1/devices/device-\(index)/registrations/\(Harness.passType)/card-1",
                                          body: Harness.registration(pushToken: pushToken), headers: Harness.applePass()).status == 201)
        }
        #expect(try await wallet.call("POST", "/v1/devices/owners-new-phone/registrations/\(Harness.passType)/card-1",
                                      body: Harness.registration(pushToken: pushToken), headers: Harness.applePass()).status == 201)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_registrations") == 2)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_registrations WHERE device_library_id = 'device-1'") == 0)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_registrations WHERE device_library_id = 'owners-new-phone'") == 1)
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_devices WHERE device_library_id = 'device-1'") == 0)
        await wallet.stop()
    }

    @Test("updatePass for a pass on three devices: three pushes of {} on the pass type's topic (its certificate), the Wallets fetch, FETCHED")
    func threeDevicesFetch() async throws {
        let wallet = try await Harness { configuration in
            // Pushed with the pass type's own certificate (the simulator's client certificate).
            configuration.passes.certificates[Harness.passType] = .init(path: configuration.tlsCaFile.map {
                URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("client.p12").path
            }, password: SimulatorCredentials.p12Password)
        }
        _ = try await wallet.updatePass(serial: "card-1")
        let card = WalletSimulator.Card(pass: PassIdentity(passTypeIdentifier: Harness.passType, serialNumber: "card-1"), authenticationToken: Harness.token)
        let tokens = (1...3).map { String(repeating: String(format: "%02x", $0), count: 32) }
        for (index, token) in tokens.enumerated() {
            let statuses = await wallet.simulator.wallet.addDevice(id: "device-\(index + 1)", pushToken: token, webServiceURL: wallet.webServiceURL, cards: [card])
            #expect(statuses == [201])
        }
        #expect(try await wallet.passStatus(serial: "card-1").devices.values.allSatisfy { $0 == "REGISTERED" })

        let reply = try await wallet.updatePass(serial: "card-1", pass: Harness.pkpass(serial: "card-1", text: "balance 42"))
        #expect(reply.text.contains("<version>2</version>"))
        // The gateway marks FETCHED as it serves; a Wallet records its download once the body has
        // arrived, a moment later — wait for both.
        #expect(try await wallet.flow.waitUntil(seconds: 120) {
            try await wallet.passStatus(serial: "card-1").devices == ["device-1": "FETCHED", "device-2": "FETCHED", "device-3": "FETCHED"]
                && wallet.simulator.wallet.fetches.count >= 3
        })
        let pushes = wallet.simulator.apns.deliveries.filter { $0.topic == Harness.passType }
        #expect(pushes.count == 3)
        #expect(Set(pushes.map(\.deviceToken)) == Set(tokens))
        #expect(pushes.allSatisfy { String(decoding: $0.payload, as: UTF8.self) == "{}" })
        let fetches = wallet.simulator.wallet.fetches
        #expect(fetches.count == 3 && fetches.allSatisfy { $0.status == 200 && $0.bytes == Harness.pkpass(serial: "card-1", text: "balance 42").count })
        #expect(wallet.flow.stub.reports.isEmpty)
        await wallet.stop()
    }

    @Test("a Wallet that never fetches is pushed 1 + passFetchRetries times, then EXPIRED with exactly one report; a late fetch is served and FETCHED")
    func neverFetches() async throws {
        let wallet = try await Harness {
            // The eager Wallet fetches within this however loaded the machine; the silent one
            // takes three of them.
            $0.passes.fetchTimeoutSeconds = 3
            $0.passes.fetchRetries = 2
        }
        _ = try await wallet.updatePass(serial: "card-1")
        let card = WalletSimulator.Card(pass: PassIdentity(passTypeIdentifier: Harness.passType, serialNumber: "card-1"), authenticationToken: Harness.token)
        let silent = String(repeating: "5a", count: 32), eager = String(repeating: "e0", count: 32)
        await wallet.simulator.wallet.addDevice(id: "silent", pushToken: silent, webServiceURL: wallet.webServiceURL, cards: [card], behaviour: .never)
        await wallet.simulator.wallet.addDevice(id: "eager", pushToken: eager, webServiceURL: wallet.webServiceURL, cards: [card])
        _ = try await wallet.updatePass(serial: "card-1", pass: Harness.pkpass(serial: "card-1", text: "v2"))

        #expect(try await wallet.flow.waitUntil(seconds: 60) { try await wallet.passStatus(serial: "card-1").devices["silent"] == "EXPIRED" })
        #expect(try await wallet.passStatus(serial: "card-1").devices["eager"] == "FETCHED")
        #expect(wallet.simulator.apns.deliveries.filter { $0.deviceToken == silent }.count == 3)
        #expect(wallet.simulator.apns.deliveries.filter { $0.deviceToken == eager }.count >= 1)
        #expect(try await wallet.flow.waitUntil(seconds: 120) { wallet.flow.stub.reports.contains { $0.operation == "reportPassUpdateNotFetched" } })
        let reports = wallet.flow.stub.reports.filter { $0.operation == "reportPassUpdateNotFetched" }
        #expect(reports.count == 1)
        #expect(reports.first?.notificationId == "\(Harness.passType)/card-1" && reports.first?.deviceCount == 1)
        // The version is marked reported and the outbox is empty: no second report can follow.
        #expect(try await wallet.flow.count("SELECT count(*) FROM passes WHERE reported_version = version") == 1)
        #expect(try await wallet.flow.count("SELECT count(*) FROM outbox") == 0)

        // The device comes back late: served, FETCHED, no new push, no new report.
        await wallet.simulator.wallet.refresh(pushToken: silent, passType: Harness.passType)
        #expect(try await wallet.passStatus(serial: "card-1").devices == ["silent": "FETCHED", "eager": "FETCHED"])
        #expect(wallet.simulator.wallet.fetches.last?.device == "silent" && wallet.simulator.wallet.fetches.last?.status == 200)
        #expect(wallet.flow.stub.reports.filter { $0.operation == "reportPassUpdateNotFetched" }.count == 1)
        await wallet.stop()
    }

    @Test("tags give only the serials changed since; a dead token removes the Wallet's registrations")
    func tagsAndDeadTokens() async throws {
        let wallet = try await Harness()
        for serial in ["card-1", "card-2"] { _ = try await wallet.updatePass(serial: serial) }
        let pushToken = String(repeating: "d1", count: 32)
        for serial in ["card-1", "card-2"] {
            #expect(try await wallet.call("POST", "/v1/devices/device-1/registrations/\(Harness.passType)/\(serial)",
                                          body: Harness.registration(pushToken: pushToken), headers: Harness.applePass()).status == 201)
        }
        let first = try await wallet.call("GET", "/v1/devices/device-1/registrations/\(Harness.passType)")
        let firstObject = try #require(try JSONSerialization.jsonObject(with: Data(first.body.utf8)) as? [String: Any])
        #expect(firstObject["serialNumbers"] as? [String] == ["card-1", "card-2"])
        let tag = try #require(firstObject["lastUpdated"] as? String)

        // Only card-2 changes; the push fails for now (the device is away), so the device asks later.
        wallet.simulator.apns.setFaults(FaultRules([pushToken: .init(.serviceUnavailable)]))
        _ = try await wallet.updatePass(serial: "card-2", pass: Harness.pkpass(serial: "card-2", text: "changed"))
        let since = try await wallet.call("GET", "/v1/devices/device-1/registrations/\(Harness.passType)?passesUpdatedSince=\(tag)")
        let sinceObject = try #require(try JSONSerialization.jsonObject(with: Data(since.body.utf8)) as? [String: Any])
        #expect(sinceObject["serialNumbers"] as? [String] == ["card-2"])
        let newTag = try #require(sinceObject["lastUpdated"] as? String)
        #expect(newTag != tag)
        #expect(try await wallet.call("GET", "/v1/passes/\(Harness.passType)/card-2", headers: Harness.applePass()).status == 200)
        #expect(try await wallet.call("GET", "/v1/devices/device-1/registrations/\(Harness.passType)?passesUpdatedSince=\(newTag)").status == 204)

        // APNs says the token is dead: the Wallet and its registrations go.
        wallet.simulator.apns.setFaults(FaultRules([pushToken: .init(.unregistered)]))
        _ = try await wallet.updatePass(serial: "card-1", pass: Harness.pkpass(serial: "card-1", text: "changed"))
        #expect(try await wallet.flow.waitUntil(seconds: 120) { try await wallet.flow.count("SELECT count(*) FROM pass_devices") == 0 })
        #expect(try await wallet.flow.count("SELECT count(*) FROM pass_registrations") == 0)
        await wallet.stop()
    }
}
