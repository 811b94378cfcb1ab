import Foundation
import PigeonBankStub
import PigeonCore
import PigeonDomain
@testable import PigeonServer
import PigeonSimulator
import PigeonTestSupport
import Testing

/// Pass updates across a crash (CONTRACT §7: nothing lost on a crash or restart).
@Suite("Wallet passes across a crash", .serialized, .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"), .enabled(if: TestTier.runsSystem, "system tier (gateways killed with -9): PIGEON_TEST_TIER"))
struct WalletPassResilienceTests {
    @Test("kill -9 between the push and the fetch: the next process keeps waiting, re-pushes, serves the fetch (FETCHED) and expires the silent Wallet with one report")
    func killBetweenPushAndFetch() async throws {
        let simulator = try await SimulatorFixture.start()
        let stub = try BankStub(configuration: .init(bankClients: ["bank"], authorizedUsers: []), port: 0, logger: .silent)
        let database = try await TestDatabase.isolatedDatabaseWithURL()
        // The first process waits an hour for each fetch, so nothing is pushed again before it
        // dies, however slow the machine; its successor waits 5 s.
        func configuration(fetchTimeout: Int) -> String {
            """
            dbUrl = \(database.url)
            migrationsPath = \(TestDatabase.migrationsDirectory.path)
            sbiOutboundWebServiceURL = \(stub.serviceURL)
            bankProxyTimeoutSeconds = 2
            passFetchTimeoutSeconds = \(fetchTimeout)
            passFetchRetries = 1
            logLevel = info
            \(simulator.simulator.configurationSnippet)
            """
        }
        let wallet = simulator.simulator.wallet
        let card = WalletSimulator.Card(pass: PassIdentity(passTypeIdentifier: WalletPassHarness.passType, serialNumber: "card-1"),
                                        authenticationToken: WalletPassHarness.token)
        let silent = String(repeating: "51", count: 32), late = String(repeating: "1a", count: 32)
        func update(_ base: String, _ text: String) async throws -> String {
            try await DeliveryResilienceTests.post(base + GatewayHarness.soapPath, GatewayHarness.envelope("""
                <inb:updatePass><passTypeIdentifier>\(WalletPassHarness.passType)</passTypeIdentifier><serialNumber>card-1</serialNumber>\
                <authenticationToken>\(WalletPassHarness.token)</authenticationToken>\
                <pass>\(WalletPassHarness.pkpass(serial: "card-1", text: text).base64EncodedString())</pass></inb:updatePass>
                """))
        }
        func states() async throws -> [String: String] {
            try await database.pool.withConnection { connection in
                Dictionary(uniqueKeysWithValues: try connection.query(sql: "SELECT device_library_id, state FROM pass_registrations").rows.compactMap { row in
                    row.text(0).flatMap { device in row.text(1).map { (device, $0) } }
                })
            }
        }

        let first = try await GatewayProcess.start(configuration: configuration(fetchTimeout: 3_600))
        #expect(try await update(first.baseURL, "v1").contains("<status>OK</status>"))
        #expect(await wallet.addDevice(id: "silent", pushToken: silent, webServiceURL: first.baseURL + "/passkit", cards: [card], behaviour: .never) == [201])
        #expect(await wallet.addDevice(id: "late", pushToken: late, webServiceURL: first.baseURL + "/passkit", cards: [card], behaviour: .never) == [201])
        #expect(try await update(first.baseURL, "v2").contains("<version>2</version>"))
        // Both pushed, both waiting for their fetch: then the process dies without a word.
        #expect(try await DeviceFlowHarness.waitUntil(seconds: 120) { try await states() == ["silent": "SENT", "late": "SENT"] })
        first.signal(SIGKILL)
        #expect(await first.waitForExit() == SIGKILL)
        #expect(simulator.simulator.apns.deliveries.filter { $0.deviceToken == silent }.count == 1)
        // While no gateway ran, the Wallets' wait for their fetch ended.
        _ = try await database.pool.withConnection { try $0.query(sql: "UPDATE pass_registrations SET next_attempt_at = now() WHERE state = 'SENT'") }

        // The late Wallet answers pushes from now on, at the next process's address (its
        // registration call finds nobody there yet; the registration is in the database).
        let port = try #require(LoopbackPort.free())
        await wallet.addDevice(id: "late", pushToken: late, webServiceURL: "http://127.0.0.1:\(port)/passkit", cards: [card])
        let successor = try await GatewayProcess.start(configuration: configuration(fetchTimeout: 5), port: port)
        #expect(try await DeviceFlowHarness.waitUntil(seconds: 60) { try await states() == ["silent": "EXPIRED", "late": "FETCHED"] }, "\(successor.log.suffix(2000))")
        #expect(simulator.simulator.apns.deliveries.filter { $0.deviceToken == silent }.count == 2)
        #expect(simulator.simulator.apns.deliveries.filter { $0.deviceToken == late }.count == 2)
        // The Wallet records its download once the body has arrived, a moment after FETCHED.
        #expect(try await DeviceFlowHarness.waitUntil(seconds: 60) { wallet.fetches.contains { $0.device == "late" && $0.status == 200 } })
        #expect(try await DeviceFlowHarness.waitUntil(seconds: 120) { stub.reports.contains { $0.operation == "reportPassUpdateNotFetched" } })
        let reports = stub.reports.filter { $0.operation == "reportPassUpdateNotFetched" }
        #expect(reports.count == 1 && reports.first?.deviceCount == 1)
        successor.signal(SIGTERM)
        #expect(await successor.waitForExit() == 0)
        stub.stop()
        simulator.stop()
        await database.drop()
    }
}
