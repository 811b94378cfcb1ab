import PigeonDelivery
import PigeonDomain
import Synchronization

/// The bank's side of the outbox in memory, for the outbox sender's tests: it takes every report
/// except those whose subject it is told to refuse (or all, while it is down), each after
/// `answering` returns (a test holding answers back). Held to the bank proxy's client by
/// BankReportingContractTests.
package final class InMemoryBankReports: BankReporting {
    /// What it answers a report it does not take.
    package struct Refusal: Error, CustomStringConvertible {
        package var description: String { "bank answered 500" }
    }

    private let refused: Set<String>
    private let answering: @Sendable () async -> Void
    private let down = Mutex(false)
    /// The reports taken, in the order taken.
    package let received = Mutex<[BankReport]>([])
    /// The sends begun, taken or not.
    package let started = Mutex(0)

    package init(refusing refused: Set<String> = [], answering: @escaping @Sendable () async -> Void = {}) {
        self.refused = refused
        self.answering = answering
    }

    /// Refuses every report while `isDown`.
    package func setDown(_ isDown: Bool) {
        down.withLock { $0 = isDown }
    }

    package func send(_ report: BankReport) async throws {
        started.withLock { $0 += 1 }
        await answering()
        if down.withLock({ $0 }) || refused.contains(report.subject) { throw Refusal() }
        received.withLock { $0.append(report) }
    }
}
