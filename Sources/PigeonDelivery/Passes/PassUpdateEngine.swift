import Foundation
import PigeonCore
import PigeonDomain
import PushCore

/// Pushes pass updates and watches for the fetches that should follow (CONTRACT §7), until
/// the stop: claims due pushes and ended fetch waits under a lease (several gateways never hold
/// the same row; a crashed one's rows come due again), pushes each pass type's tokens together,
/// and writes what became of each claim by ``PassUpdatePolicy``. What was pushed is written down
/// even while the engine stops, so a stop repeats no push; claims not yet pushed are handed back.
package struct PassUpdateEngine: Sendable {
    var queue: any PassUpdateQueueing
    var pusher: any PassPushing
    var policy: PassUpdatePolicy
    var owner: String
    var clock: any DeliveryClock
    var random: any RandomSource
    var batchSize = 500
    var lease: Duration = .seconds(60)
    /// How long an idle engine waits before claiming again: a second — a Wallet's update is not
    /// a one-time code, and every claim takes a connection of the pool the SOAP service and the
    /// delivery engine share (a quarter-second poll showed as slower device calls in a loaded
    /// test run with a two-connection pool).
    var idlePoll: Duration = .seconds(1)
    var metrics: MetricsRegistry
    var logger: Logger

    package init(queue: any PassUpdateQueueing, pusher: any PassPushing, policy: PassUpdatePolicy, owner: String,
                clock: any DeliveryClock = SystemDeliveryClock(), random: any RandomSource = SystemRandomSource(),
                batchSize: Int = 500, metrics: MetricsRegistry, logger: Logger) {
        self.queue = queue
        self.pusher = pusher
        self.policy = policy
        self.owner = owner
        self.clock = clock
        self.random = random
        self.batchSize = batchSize
        self.metrics = metrics
        self.logger = logger
    }

    /// Runs until `stop` is requested (or the task is cancelled), then hands back what it holds.
    package func run(until stop: GracefulStop = GracefulStop()) async {
        logger.info("pass update engine started", metadata: ["fetchTimeoutSeconds": String(policy.fetchTimeout.components.seconds),
                                                              "fetchRetries": String(policy.fetchRetries)])
        let (queue, owner, batchSize, lease) = (queue, owner, batchSize, lease)
        await loop.run(
            until: stop, claim: { try await queue.claimPassPushes(owner: owner, limit: batchSize, lease: lease) },
            work: { claims, stop in await process(claims, stop: stop) }, write: { results in await record(results) },
            release: { try await queue.releasePassPushes(owner: owner) })
        logger.info("pass update engine stopped")
    }

    private var loop: LeasedWorkLoop<ClaimedPassPush> {
        LeasedWorkLoop(what: "pass update pushes", clock: clock, logger: logger, idlePoll: idlePoll, wake: nil)
    }

    /// The results of one round of claims: expiries at once, pushes per pass type. Once `stop`
    /// is requested the pushes not started are left out, held until the engine hands them back.
    func process(_ claims: [ClaimedPassPush], stop: GracefulStop = GracefulStop()) async -> [PassPushResult] {
        var results: [PassPushResult] = []
        var pushes: [String: [ClaimedPassPush]] = [:]
        for claim in claims {
            switch policy.step(for: claim) {
            case .expire: results.append(PassPushResult(claim: claim, change: .expired))
            case .push: pushes[claim.pass.passTypeIdentifier, default: []].append(claim)
            }
        }
        let pusher = self.pusher
        let answered = await withTaskGroup(of: [(ClaimedPassPush, PushOutcome)].self) { group in
            for (passType, claimsOfType) in pushes {
                group.addTask {
                    let tokens = claimsOfType.map(\.pushToken)
                    let outcomes = await stop.interrupting { await pusher.pushUpdates(passTypeIdentifier: passType, tokens: tokens) }
                    return Array(zip(claimsOfType, outcomes))
                }
            }
            var all: [(ClaimedPassPush, PushOutcome)] = []
            for await part in group { all += part }
            return all
        }
        let now = clock.now()
        var generator = RandomSourceGenerator(source: random)
        var counts: [String: Double] = [:]
        for (claim, outcome) in answered {
            // Not pushed because the engine is stopping: left held, handed back at the end.
            if outcome == .deferred && stop.shouldStop { continue }
            counts[outcome.label, default: 0] += 1
            results.append(PassPushResult(claim: claim, change: policy.change(after: outcome, for: claim, now: now, random: &generator)))
        }
        for (label, count) in counts { metrics.increment(Metric.passPushesTotal, labels: ["outcome": label], by: count) }
        return results
    }

    private func record(_ results: [PassPushResult]) async {
        var settled: [String: Double] = [:]
        for result in results {
            switch result.change {
            case .expired: settled["EXPIRED", default: 0] += 1
            case .failed(let error):
                settled["SENDING_FAILED", default: 0] += 1
                logger.warning("pass update push failed for good", metadata: [
                    "pass": result.claim.pass.description, "device": LogText.escaped(result.claim.deviceLibraryIdentifier, limit: 64),
                    "error": LogText.escaped(error, limit: 200)])
            case .tokenDead:
                logger.info("Wallet device's push token is dead; its registrations are removed", metadata: [
                    "device": LogText.escaped(result.claim.deviceLibraryIdentifier, limit: 64)])
            case .sent, .retry:
                break
            }
        }
        let (queue, owner) = (queue, owner)
        await loop.record { try await queue.recordPassPushes(results, owner: owner) }
        for (state, count) in settled { metrics.increment(Metric.passDeliveriesTotal, labels: ["state": state], by: count) }
    }
}
