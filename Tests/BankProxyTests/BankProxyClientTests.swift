import BankProxy
import Foundation
import OutboundHTTP
@testable import PigeonBankStub
import PigeonCore
import PigeonDomain
import PigeonTestSupport
import Testing

/// The bank proxy's SOAP client (CONTRACT §3) against `pigeon bank-stub` over loopback: each
/// answer the device API relies on, each report, and each way a bank fails — unknown bank
/// client, down, garbage, too slow, wrong credentials — as the one ``BankProxyError`` kind the
/// device API maps to its own answer.
@Suite("Bank proxy client against the bank stub", .serialized,
       .enabled(if: TestTier.runsIntegration, "integration tier (loopback sockets): PIGEON_TEST_TIER"))
struct BankProxyClientTests {
    /// A stub and a client pointed at it; both stop with ``finish()``.
    struct Setting {
        let stub: BankStub
        let http: HTTP2Client
        let client: BankProxyClient

        init(_ configuration: BankStub.Configuration = .init(bankClients: ["bank"], authorizedUsers: ["alice"], fixedCode: "424242"),
             credentials: (username: String, password: String)? = nil, timeout: Duration = .seconds(5)) throws {
            stub = try BankStub(configuration: configuration, port: 0, logger: .silent)
            http = try HTTP2Client(configuration: .init(maxConnections: 2, maxStreamsPerConnection: 10, timeout: timeout, threadName: "bank-proxy-test"))
            client = BankProxyClient(url: stub.serviceURL, http: http, credentials: credentials)
        }

        func finish() {
            http.shutdown(abandonRunning: true)
            stub.stop()
        }
    }

    static func request(_ user: String, bank: String = "bank") -> SubscriptionRequest {
        SubscriptionRequest(bankClientId: bank, userId: user, deviceId: "phone-1", platform: "IOS")
    }

    @Test("the subscription calls: authorized without a code, a code sent and checked (a wrong one refused), an unknown bank client named as such")
    func subscriptions() async throws {
        let setting = try Setting()
        defer { setting.finish() }
        #expect(try await setting.client.checkSubscriptionAuthorized(Self.request("alice")) == true)
        #expect(try await setting.client.checkSubscriptionAuthorized(Self.request("bob")) == false)
        #expect(try await setting.client.authorizeSubscription(Self.request("bob")) == true)
        #expect(setting.stub.smsSent == 1 && setting.stub.code(bankClientId: "bank", userId: "bob", deviceId: "phone-1") == "424242")
        #expect(try await setting.client.verifySubscriptionAuthorization(bankClientId: "bank", userId: "bob", deviceId: "phone-1", code: "000000") == false)
        #expect(try await setting.client.verifySubscriptionAuthorization(bankClientId: "bank", userId: "bob", deviceId: "phone-1", code: "424242") == true)
        let unknown = await bankProxyFailure { _ = try await setting.client.checkSubscriptionAuthorized(Self.request("carol", bank: "other-bank")) }
        #expect(unknown == .bankClientNotExists)
    }

    @Test("reports arrive as sent: an expiry with its users, an opening, a pass update not fetched")
    func reports() async throws {
        let setting = try Setting()
        defer { setting.finish() }
        try await setting.client.reportNotificationExpired(notificationId: "n-1", users: ["alice", "bob"])
        try await setting.client.pushIsOpened(notificationId: "n-2", user: "carol")
        try await setting.client.reportPassUpdateNotFetched(passTypeIdentifier: "pass.com.bank.card", serialNumber: "c-1", deviceCount: 3)
        #expect(setting.stub.reports == [
            BankStub.Report(operation: "reportNotificationExpired", notificationId: "n-1", users: ["alice", "bob"]),
            BankStub.Report(operation: "pushIsOpened", notificationId: "n-2", users: ["carol"]),
            BankStub.Report(operation: "reportPassUpdateNotFetched", notificationId: "pass.com.bank.card/c-1", users: [], deviceCount: 3),
        ])
    }

    @Test("a bank that is down, answers garbage or is too slow is unavailable or an invalid answer, never a yes")
    func failures() async throws {
        // A 5 s timeout, and a slow bank far slower: the stub answers on the test process's
        // threads, which a loaded machine can hold up past a second.
        let setting = try Setting(timeout: .seconds(5))
        defer { setting.finish() }
        setting.stub.setMode(.down)
        #expect(await bankProxyFailure { _ = try await setting.client.checkSubscriptionAuthorized(Self.request("alice")) } == .unavailable)
        setting.stub.setMode(.garbage)
        #expect(await bankProxyFailure { _ = try await setting.client.checkSubscriptionAuthorized(Self.request("alice")) } == .invalidAnswer)
        setting.stub.setMode(.slow(milliseconds: 15_000))
        #expect(await bankProxyFailure { _ = try await setting.client.checkSubscriptionAuthorized(Self.request("alice")) } == .unavailable)
        setting.stub.setMode(.normal)
        #expect(try await setting.client.checkSubscriptionAuthorized(Self.request("alice")) == true, "answers again once the bank is back")
    }

    @Test("Basic credentials: the right ones pass, wrong ones are refused as unavailable and report nothing")
    func credentials() async throws {
        let configuration = BankStub.Configuration(bankClients: ["bank"], authorizedUsers: ["alice"], requiredCredentials: ("pigeon", "s3cret"))
        let right = try Setting(configuration, credentials: ("pigeon", "s3cret"))
        defer { right.finish() }
        #expect(try await right.client.checkSubscriptionAuthorized(Self.request("alice")) == true)
        let wrong = BankProxyClient(url: right.stub.serviceURL, http: right.http, credentials: ("pigeon", "guess"))
        #expect(await bankProxyFailure { try await wrong.pushIsOpened(notificationId: "n-3", user: "alice") } == .unavailable)
        #expect(right.stub.reports.isEmpty)
    }
}
