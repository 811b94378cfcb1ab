import BankProxy
import Foundation
import OutboundHTTP
@testable import PigeonBankStub
import PigeonDeviceAPI
import PigeonDomain
import PigeonTestSupport
import Testing

/// The bank's answers about a new device (CONTRACT §3) as the device API relies on them, held to
/// both implementations: the fake bank the router tests run on (unit tier) and the SOAP client
/// talking to `pigeon bank-stub` over loopback (integration tier).
@Suite("Subscription authorizing contract: the fake bank and the bank proxy's client answer alike", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct SubscriptionAuthorizingContractTests {
    enum Kind: String, CustomStringConvertible, CaseIterable {
        case fake, proxy
        var description: String { rawValue }
        static var available: [Kind] { TestTier.runsIntegration ? [.fake, .proxy] : [.fake] }
    }

    /// A bank knowing the bank client `bank`, authorizing `alice` without a code; the code it
    /// sent a device; a way to make it fail; how to stop it.
    struct Bank {
        var seam: any SubscriptionAuthorizing
        var code: @Sendable (_ user: String, _ device: String) -> String?
        var fail: @Sendable () -> Void
        var finish: @Sendable () -> Void
    }

    static func make(_ kind: Kind) throws -> Bank {
        switch kind {
        case .fake:
            let bank = FakeBank(authorizedUsers: ["alice"])
            return Bank(seam: bank, code: { bank.code(userId: $0, deviceId: $1) },
                        fail: { bank.setFailure(BankProxyError(.unavailable, "down")) }, finish: {})
        case .proxy:
            let stub = try BankStub(configuration: .init(bankClients: ["bank"], authorizedUsers: ["alice"]), port: 0, logger: .silent)
            let http = try HTTP2Client(configuration: .init(maxConnections: 2, maxStreamsPerConnection: 10, timeout: .seconds(5), threadName: "bank-contract"))
            return Bank(seam: ProxySeam(client: BankProxyClient(url: stub.serviceURL, http: http)),
                        code: { stub.code(bankClientId: "bank", userId: $0, deviceId: $1) },
                        fail: { stub.setMode(.down) },
                        finish: { http.shutdown(abandonRunning: true); stub.stop() })
        }
    }

    static func request(_ user: String, bank: String = "bank") -> SubscriptionRequest {
        SubscriptionRequest(bankClientId: bank, userId: user, deviceId: "phone-1", platform: "IOS")
    }

    @Test("an authorized user needs no code; another gets one, and only that code verifies", arguments: Kind.available)
    func codes(kind: Kind) async throws {
        let bank = try Self.make(kind)
        defer { bank.finish() }
        #expect(try await bank.seam.checkSubscriptionAuthorized(Self.request("alice")) == true)
        #expect(try await bank.seam.checkSubscriptionAuthorized(Self.request("bob")) == false)
        #expect(try await bank.seam.authorizeSubscription(Self.request("bob")) == true)
        let code = try #require(bank.code("bob", "phone-1"))
        #expect(try await bank.seam.verifySubscriptionAuthorization(bankClientId: "bank", userId: "bob", deviceId: "phone-1", code: code + "0") == false)
        #expect(try await bank.seam.verifySubscriptionAuthorization(bankClientId: "bank", userId: "bob", deviceId: "phone-1", code: code) == true)
    }

    @Test("an unknown bank client is named as such; a bank that is down is unavailable, never a yes", arguments: Kind.available)
    func failures(kind: Kind) async throws {
        let bank = try Self.make(kind)
        defer { bank.finish() }
        #expect(await bankProxyFailure { _ = try await bank.seam.checkSubscriptionAuthorized(Self.request("alice", bank: "other")) } == .bankClientNotExists)
        bank.fail()
        #expect(await bankProxyFailure { _ = try await bank.seam.checkSubscriptionAuthorized(Self.request("alice")) } == .unavailable)
        #expect(await bankProxyFailure { _ = try await bank.seam.authorizeSubscription(Self.request("bob")) } == .unavailable)
    }
}

/// The SOAP client behind the device API's seam, as the gateway composes it (PigeonServer
/// declares the same conformance; this test target does not import the composition).
private struct ProxySeam: SubscriptionAuthorizing {
    let client: BankProxyClient

    func checkSubscriptionAuthorized(_ request: SubscriptionRequest) async throws(BankProxyError) -> Bool {
        try await client.checkSubscriptionAuthorized(request)
    }

    func authorizeSubscription(_ request: SubscriptionRequest) async throws(BankProxyError) -> Bool {
        try await client.authorizeSubscription(request)
    }

    func verifySubscriptionAuthorization(bankClientId: String, userId: String, deviceId: String, code: String) async throws(BankProxyError) -> Bool {
        try await client.verifySubscriptionAuthorization(bankClientId: bankClientId, userId: userId, deviceId: deviceId, code: code)
    }
}
