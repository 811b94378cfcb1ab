import Foundation
import PigeonCore
import PigeonDomain
import Synchronization

/// What became of one claimed delivery, with the device bookkeeping it implies.
struct FinishedDelivery: Sendable {
    var result: DeliveryResult
    /// Devices whose tokens the service declared dead: removed before the state is written.
    var deadDevices: [Int64]
    /// Devices a service accepted a push for (subscription hygiene).
    var reachedDevices: [Int64]
    /// The lane's allowance the delivery holds room in until its outcome is written (or given
    /// up): what a crash would push again stays within it.
    var allowance: ClaimAllowance? = nil
}

/// Writes deliveries' outcomes as they finish, in small group commits: the writer wakes when an
/// outcome arrives, waits `commitInterval` for others unless `commitSize` are already waiting,
/// and writes all that are waiting in one group; outcomes arriving during a write form the
/// next group. Writing an outcome also ends its lease, so after a crash only the pushes in
/// flight and one group's outcomes are repeated, not whole claimed batches.
///
/// Outcomes that cannot be written after a few attempts are dropped with an error in the log:
/// their deliveries stay leased and are claimed again when the lease ends.
final class OutcomeRecorder: Sendable {
    struct Settings: Sendable {
        var commitSize = 200
        var commitInterval: Duration = .milliseconds(5)
        var writeAttempts = 3
        var retryDelay: Duration = .milliseconds(500)
    }

    private let owner: String
    private let queue: any DeliveryQueueing
    private let devices: any DeviceDirectory
    private let clock: any DeliveryClock
    private let settings: Settings
    private let logger: Logger
    private let metrics: MetricsRegistry
    private let reportsWritten: WakeSignal?
    private let waiting = Mutex<[FinishedDelivery]>([])
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(owner: String, queue: any DeliveryQueueing, devices: any DeviceDirectory, clock: any DeliveryClock,
         settings: Settings, reportsWritten: WakeSignal? = nil, logger: Logger, metrics: MetricsRegistry) {
        self.reportsWritten = reportsWritten
        self.metrics = metrics
        self.owner = owner
        self.queue = queue
        self.devices = devices
        self.clock = clock
        self.settings = settings
        self.logger = logger
        (wakes, wake) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Hands over a finished delivery; it is written with the next group.
    func add(_ finished: FinishedDelivery) {
        let count = waiting.withLock { waiting in
            waiting.append(finished)
            return waiting.count
        }
        if count == 1 || count == settings.commitSize { wake.yield() }
    }

    /// Writes groups until ``finish()`` is called (then ``drain()`` writes what is left): a
    /// graceful stop leaves it running, so outcomes of the pushes finishing during the stop are
    /// written as they come. (Cancelled, the hard stop, its writes fail and their deliveries are
    /// left to their lease or the owner's hand-back.)
    func run() async {
        for await _ in wakes {
            if waiting.withLock({ $0.count }) < settings.commitSize {
                try? await clock.sleep(for: settings.commitInterval)
            }
            await writeWaiting()
        }
    }

    /// Ends ``run()`` once the groups waiting are written; called once the workers have stopped.
    func finish() {
        wake.finish()
    }

    /// Writes every outcome still waiting; called once the workers have stopped.
    func drain() async {
        while waiting.withLock({ !$0.isEmpty }) {
            await writeWaiting()
        }
    }

    private func writeWaiting() async {
        let group = waiting.withLock { waiting in
            let group = waiting
            waiting.removeAll(keepingCapacity: true)
            return group
        }
        guard !group.isEmpty else { return }
        // Written or given up (the lease then brings the deliveries back): their room is free.
        defer {
            var counts: [ObjectIdentifier: (ClaimAllowance, Int)] = [:]
            for finished in group {
                guard let allowance = finished.allowance else { continue }
                counts[ObjectIdentifier(allowance), default: (allowance, 0)].1 += 1
            }
            for (allowance, count) in counts.values { allowance.release(count) }
        }
        let dead = group.flatMap(\.deadDevices)
        let reached = group.flatMap(\.reachedDevices)
        for attempt in 1...max(1, settings.writeAttempts) {
            do {
                // Dead tokens go first: once a state is visible, its device clean-up is done too.
                if !dead.isEmpty { try await devices.remove(deviceIds: dead) }
                if !reached.isEmpty { try await devices.markDelivered(deviceIds: reached) }
                let written = try await queue.record(group.map(\.result), owner: owner)
                if written < group.count {
                    // Not an error as a rule (a phone acknowledged during the push), but a lease
                    // that ended before its outcome means a push made again: operators see both.
                    metrics.increment(Metric.outcomesNotWrittenTotal, by: Double(group.count - written))
                    logger.notice("outcomes not written: acknowledged or expired while pushed, or their lease had ended (those are pushed again)",
                                  metadata: ["outcomes": String(group.count), "not written": String(group.count - written)])
                }
                // A delivery that reached nobody had its report to the bank written with it.
                if group.contains(where: { $0.result.state.reachedNobody }) {
                    reportsWritten?.signal()
                }
                if !dead.isEmpty {
                    logger.info("removed devices with dead push tokens", metadata: ["devices": String(dead.count)])
                }
                return
            } catch {
                guard attempt < settings.writeAttempts else {
                    logger.error("cannot record delivery outcomes; they will be claimed again when their lease ends",
                                 metadata: ["error": "\(error)", "deliveries": String(group.count)])
                    return
                }
                try? await clock.sleep(for: settings.retryDelay)
            }
        }
    }
}
