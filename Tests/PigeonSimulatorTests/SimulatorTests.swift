import Foundation
import OutboundHTTP
@testable import PigeonSimulator
import PigeonTestSupport
@testable import PushCore
@testable import PushTransport
import Testing

/// The assembled simulator as `pigeon simulate` runs it: generated credentials, APNs certificate
/// authentication with the client `.p12`, FCM through its own OAuth endpoint, admin calls.
@Suite("pigeon simulate", .enabled(if: TestTier.runsIntegration, "integration tier (sockets): PIGEON_TEST_TIER"))
struct SimulatorTests {
    @Test("generated credentials work end to end for both services, and faults can be set over HTTP")
    func endToEnd() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        #expect(simulator.configurationSnippet.contains("apnsKeyId = \(SimulatorCredentials.keyId)"))

        // APNs, certificate authentication: no provider token, the .p12 made for us.
        let certificateClient = try HTTP2Client(configuration: .init(
            caFile: simulator.credentials.caFile,
            clientCertificate: .init(path: simulator.credentials.clientP12, password: SimulatorCredentials.p12Password)))
        defer { certificateClient.shutdown() }
        let message = PushMessage(notificationId: "n1", text: "hello", urgency: .high, expiresAt: Date() + 60)
        let apnsRequest = try APNsRequestBuilder(topic: SimulatorCredentials.topic).request(for: message, deviceToken: "0a0b0c", apnsId: UUID())
        let accepted = try await certificateClient.send(url: simulator.baseURL + apnsRequest.path, headers: apnsRequest.headers, body: apnsRequest.body)
        #expect(accepted.status == 200)

        // Without a certificate or token the same request is refused.
        let anonymous = try HTTP2Client(configuration: .init(caFile: simulator.credentials.caFile))
        defer { anonymous.shutdown() }
        let refused = try await anonymous.send(url: simulator.baseURL + apnsRequest.path, headers: apnsRequest.headers, body: apnsRequest.body)
        #expect(refused.status == 403)

        // APNs token authentication with the generated .p8.
        let signing = try APNsSigningCredentials(p8PEM: try String(contentsOfFile: simulator.credentials.apnsKey, encoding: .utf8),
                                                 keyId: SimulatorCredentials.keyId, teamId: SimulatorCredentials.teamId)
        var headers = apnsRequest.headers
        headers["authorization"] = "bearer \(try signing.providerToken(issuedAt: Date()))"
        #expect(try await anonymous.send(url: simulator.baseURL + "/3/device/0d0e0f", headers: headers, body: apnsRequest.body).status == 200)

        // FCM with the generated service account, its token_uri pointing at the simulator.
        let account = try ServiceAccount(json: try Data(contentsOf: URL(fileURLWithPath: simulator.credentials.serviceAccount)))
        let tokens = FCMAccessTokens(account: account, client: anonymous)
        let fcmRequest = try FCMRequestBuilder(projectId: account.projectId).request(for: message, registrationToken: "fcm-1", now: Date())
        var fcmHeaders = fcmRequest.headers
        fcmHeaders["authorization"] = "Bearer \(try await tokens.token())"
        #expect(try await anonymous.send(url: simulator.baseURL + fcmRequest.path, headers: fcmHeaders, body: fcmRequest.body).status == 200)

        // Faults over the admin call apply to both services.
        let set = try await anonymous.send(url: simulator.baseURL + "/simulator/faults", headers: [:],
                                           body: Data(#"{"0a0b0c": {"fault": "unregistered"}, "fcm-1": {"fault": "serviceUnavailable", "times": 1}}"#.utf8))
        #expect(set.status == 404)  // the client only POSTs; faults are set with PUT
        simulator.apns.setFaults(FaultRules(json: Data(#"{"0a0b0c": {"fault": "unregistered"}}"#.utf8))!)
        let gone = try await certificateClient.send(url: simulator.baseURL + apnsRequest.path, headers: apnsRequest.headers, body: apnsRequest.body)
        #expect(gone.status == 410)
        #expect(FaultRules(json: Data(#"{"x": {"fault": "nonsense"}}"#.utf8)) == nil)

        #expect(simulator.apns.deliveries.map(\.deviceToken) == ["0a0b0c", "0d0e0f"])
        #expect(simulator.fcm.deliveries.map(\.registrationToken) == ["fcm-1"])
    }
}
