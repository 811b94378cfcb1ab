import Foundation
import PigeonCore
import PigeonDomain

/// Sends the outbox to the bank until the stop: claims due reports under a lease, sends up to
/// `concurrency` at once, deletes those the bank took and reschedules the others by
/// ``ReportSchedule``. A report is deleted only after the bank answered, so it survives restarts
/// and bank outages (at least once; the bank may see a report twice if its answer is lost). One
/// that still fails `maxAge` after it was written moves to the dead letters (`pigeon outbox`).
package struct OutboxSender: Sendable {
    var outbox: any ReportQueue
    var bank: any BankReporting
    var clock: any DeliveryClock
    var random: any RandomSource
    var schedule = ReportSchedule()
    var batchSize = 64
    var concurrency = 16
    var lease: Duration = .seconds(120)
    /// `reportMaxAgeHours`: a report failing for longer is dead-lettered.
    var maxAge: Duration = .seconds(72 * 3600)
    var idlePoll: Duration = .seconds(1)
    /// Ends an idle wait early: a report was just written (an expiry at its deadline).
    var wake: WakeSignal?
    var metrics: MetricsRegistry
    var logger: Logger

    package init(outbox: any ReportQueue, bank: any BankReporting, clock: any DeliveryClock = SystemDeliveryClock(),
                random: any RandomSource = SystemRandomSource(), lease: Duration, maxAge: Duration, wake: WakeSignal? = nil,
                metrics: MetricsRegistry, logger: Logger) {
        self.wake = wake
        self.outbox = outbox
        self.bank = bank
        self.clock = clock
        self.random = random
        self.lease = lease
        self.maxAge = maxAge
        self.metrics = metrics
        self.logger = logger
    }

    /// What became of one claim of reports: each sent one with the bank's refusal (`nil`: taken),
    /// and those a stop kept from being sent.
    struct Round: Sendable {
        var results: [(ClaimedReport, String?)]
        var notSent: [ClaimedReport]
    }

    /// Sends until `stop` is requested (or the task is cancelled). A stop sends no report more:
    /// those on the wire finish and are written down, the others are handed back at once
    /// (CONTRACT §10).
    package func run(until stop: GracefulStop = GracefulStop()) async {
        logger.info("outbox sender started")
        let (outbox, batchSize, lease) = (outbox, batchSize, lease)
        // What the bank answered is written down while the sender stops, so no report is sent
        // twice for it.
        await LeasedWorkLoop<ClaimedReport>(what: "outbox reports", clock: clock, logger: logger, idlePoll: idlePoll, wake: wake).run(
            until: stop, claim: { try await outbox.claim(limit: batchSize, lease: lease) },
            work: { claimed, stop in await send(claimed, stop: stop) }, write: { round in await record(round) })
        logger.info("outbox sender stopped")
    }

    /// Sends `reports`, `concurrency` at once; once `stop` is requested, starts no more (those
    /// on the wire are not interrupted).
    private func send(_ reports: [ClaimedReport], stop: GracefulStop) async -> Round {
        await withTaskGroup(of: (ClaimedReport, String?).self) { group in
            var next = 0
            func addNext() {
                guard next < reports.count, !stop.shouldStop else { return }
                let report = reports[next]
                next += 1
                group.addTask { (report, await deliver(report.report)) }
            }
            for _ in 0..<min(concurrency, reports.count) { addNext() }
            var results: [(ClaimedReport, String?)] = []
            while let result = await group.next() {
                results.append(result)
                addNext()
            }
            return Round(results: results, notSent: Array(reports[next...]))
        }
    }

    private func record(_ round: Round) async {
        if !round.notSent.isEmpty {
            do {
                try await outbox.handBack(round.notSent.map(\.id))
                logger.notice("stopping: reports not yet sent handed back to the outbox", metadata: ["reports": String(round.notSent.count)])
            } catch {
                logger.warning("cannot hand reports back; they come due when their lease ends", metadata: ["error": "\(error)"])
            }
        }
        let results = round.results
        let sent = results.filter { $0.1 == nil }.map(\.0.id)
        do {
            try await outbox.complete(sent)
        } catch {
            logger.warning("cannot remove sent reports; they will be sent again", metadata: ["error": "\(error)"])
        }
        var random = RandomSourceGenerator(source: random)
        let now = clock.now()
        for (claimed, failure) in results {
            guard let failure else {
                metrics.increment(Metric.bankReportsTotal, labels: Self.labels(claimed.report, result: "sent"))
                continue
            }
            if now.timeIntervalSince(claimed.createdAt) > Double(maxAge.components.seconds) {
                metrics.increment(Metric.bankReportsTotal, labels: Self.labels(claimed.report, result: "dead"))
                logger.error("report dead-lettered: the bank refused it for longer than reportMaxAgeHours; 'pigeon outbox list' shows it, 'pigeon outbox retry' sends it again", metadata: [
                    "kind": claimed.report.kind, "id": String(claimed.id), "attempts": String(claimed.attempt), "error": failure])
                do {
                    try await outbox.bury(claimed.id, error: failure)
                } catch {
                    logger.warning("cannot dead-letter the report; it stays in the outbox", metadata: ["id": String(claimed.id), "error": "\(error)"])
                }
                continue
            }
            metrics.increment(Metric.bankReportsTotal, labels: Self.labels(claimed.report, result: "retry"))
            let retryAt = schedule.retryAt(afterAttempt: claimed.attempt, now: now, random: &random)
            logger.warning("report not taken by the bank; will retry", metadata: [
                "kind": claimed.report.kind, "attempt": String(claimed.attempt), "error": failure,
                "retryIn": String(format: "%.1fs", retryAt.timeIntervalSince(now))])
            try? await outbox.reschedule(claimed.id, at: retryAt, error: failure)
        }
    }

    /// Sends one report; the failure's description when the bank did not take it.
    private func deliver(_ report: BankReport) async -> String? {
        do {
            try await bank.send(report)
            return nil
        } catch {
            return "\(error)"
        }
    }
}

extension OutboxSender {
    /// The labels of `pigeon_bank_reports_total` for `report`: its kind and the result, and for an
    /// expiry report why it was sent (`timeout`, `reached_nobody`), so early reports are told apart.
    static func labels(_ report: BankReport, result: String) -> [String: String] {
        var labels = ["kind": report.kind, "result": result]
        if let reason = report.expiryReason { labels["reason"] = reason.metricLabel }
        return labels
    }
}
