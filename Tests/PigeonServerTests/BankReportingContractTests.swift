import BankProxy
import Foundation
import OutboundHTTP
import PigeonBankStub
import PigeonCore
import PigeonDelivery
import PigeonDomain
@testable import PigeonServer
import PigeonTestSupport
import Testing

/// The outbox sender's bank (CONTRACT §3, §7, §10), held to both implementations: the in-memory
/// bank its tests run on (unit tier) and the gateway's SOAP client talking to `pigeon bank-stub`
/// over loopback (integration tier).
@Suite("Bank reporting contract: the in-memory bank and the bank proxy's client take and refuse alike", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct BankReportingContractTests {
    enum Kind: String, CustomStringConvertible, CaseIterable {
        case memory, proxy
        var description: String { rawValue }
        static var available: [Kind] { TestTier.runsIntegration ? [.memory, .proxy] : [.memory] }
    }

    /// What the bank can know of a report on the wire: its operation, subject and who it names
    /// (an expiry's reason is the gateway's own, not a field of the call).
    struct Heard: Equatable, CustomStringConvertible {
        var kind: String
        var subject: String
        var concerned: [String]
        var description: String { "\(kind) \(subject) \(concerned)" }

        init(kind: String, subject: String, concerned: [String]) {
            self.kind = kind
            self.subject = subject
            self.concerned = concerned
        }

        init(_ report: BankReport) {
            self.init(kind: report.kind, subject: report.subject, concerned: report.concerned)
        }
    }

    /// The bank as the seam, what it heard, a way to take it down, and how to stop it.
    struct Bank {
        var seam: any BankReporting
        var heard: @Sendable () -> [Heard]
        var goDown: @Sendable () -> Void
        var finish: @Sendable () -> Void
    }

    static func make(_ kind: Kind) throws -> Bank {
        switch kind {
        case .memory:
            let bank = InMemoryBankReports()
            return Bank(seam: bank, heard: { bank.received.withLock { $0 }.map(Heard.init) }, goDown: { bank.setDown(true) }, finish: {})
        case .proxy:
            let stub = try BankStub(configuration: .init(), port: 0, logger: .silent)
            let http = try HTTP2Client(configuration: .init(maxConnections: 2, maxStreamsPerConnection: 10, timeout: .seconds(30),
                                                            threadName: "bank-reports-contract"))
            return Bank(seam: BankProxyClient(url: stub.serviceURL, http: http),
                        heard: {
                            stub.reports.map { report in
                                Heard(kind: report.operation, subject: report.notificationId,
                                      concerned: report.deviceCount.map { ["\($0) device\($0 == 1 ? "" : "s")"] } ?? report.users)
                            }
                        },
                        goDown: { stub.setMode(.down) },
                        finish: { http.shutdown(abandonRunning: true); stub.stop() })
        }
    }

    static let reports: [BankReport] = [
        .pushIsOpened(notificationId: "code-1", user: "alice"),
        .notificationExpired(notificationId: "code-2", users: ["bob", "carol"], reason: .timeout),
        .notificationExpired(notificationId: "code-3", users: ["dave"], reason: .reachedNobody),
        .passUpdateNotFetched(pass: PassIdentity(passTypeIdentifier: "pass.com.example.card", serialNumber: "card-7"), deviceCount: 2),
    ]

    @Test("every kind of report is taken as sent: the bank hears its operation, its subject and whom it names, in order", arguments: Kind.available)
    func taken(kind: Kind) async throws {
        let bank = try Self.make(kind)
        defer { bank.finish() }
        for report in Self.reports {
            try await bank.seam.send(report)
        }
        #expect(bank.heard() == Self.reports.map(Heard.init))
    }

    @Test("a bank that does not take a report makes the send throw, so the outbox keeps it; nothing is heard", arguments: Kind.available)
    func refused(kind: Kind) async throws {
        let bank = try Self.make(kind)
        defer { bank.finish() }
        bank.goDown()
        await #expect(throws: (any Error).self) { try await bank.seam.send(Self.reports[0]) }
        #expect(bank.heard().isEmpty)
    }
}
