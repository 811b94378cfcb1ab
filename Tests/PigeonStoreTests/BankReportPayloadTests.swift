import Foundation
import PigeonDomain
import Testing
@testable import PigeonStore
import PigeonTestSupport

/// The outbox's row form of a report (kind and JSON payload), without a database.
@Suite("Bank report rows", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct BankReportPayloadTests {
    /// One report of every kind. The switch has no default: a new kind does not compile until it
    /// has an example here, so the checks below cover it.
    static let examples: [BankReport] = [
        .pushIsOpened(notificationId: "n-1", user: "alice"),
        .notificationExpired(notificationId: "n-2", users: ["alice", "bob \"quoted\"", "Ёж"]),
        .passUpdateNotFetched(pass: PassIdentity(passTypeIdentifier: "pass.bank.card", serialNumber: "s/1"), deviceCount: 3),
    ]

    static func isExample(_ report: BankReport) -> Bool {
        switch report {
        case .pushIsOpened, .notificationExpired, .passUpdateNotFetched: true
        }
    }

    @Test("every kind is one the outbox sender claims, and its row decodes back to the same report")
    func everyKindRoundTrips() {
        #expect(Self.examples.allSatisfy(Self.isExample))
        #expect(Set(Self.examples.map(\.kind)) == Set(BankReport.storedKinds), "storedKinds and the report kinds differ")
        for report in Self.examples {
            #expect(BankReport(kind: report.kind, payload: report.payload) == report, "\(report.kind) does not round-trip")
        }
    }

    @Test("a payload that is not its kind's shape, not JSON, or of a kind this binary does not know decodes to nothing")
    func badRowsDecodeToNothing() {
        for report in Self.examples {
            #expect(BankReport(kind: report.kind, payload: "{}") == nil, "\(report.kind) with an empty object")
            #expect(BankReport(kind: report.kind, payload: "not json") == nil, "\(report.kind) with text")
            #expect(BankReport(kind: report.kind, payload: "[1, 2]") == nil, "\(report.kind) with an array")
        }
        #expect(BankReport(kind: "pushIsOpened", payload: #"{"notificationId": "n", "users": []}"#) == nil, "an opening names its user")
        #expect(BankReport(kind: "reportSomethingNewer", payload: Self.examples[0].payload) == nil)
    }
}
