import Foundation
import PigeonCore
import PigeonDomain
import PushCore

/// Pushes Live Activity events and widget refreshes (CONTRACT §9) until the stop: claims due
/// pushes under a lease, drops any that would not be newer than what the device already has,
/// pushes the rest grouped by route and event (an event's payload is built once for all its
/// devices), and writes what became of each. Woken at once when the bank or a phone queues
/// something; a stop hands back what it holds.
package struct ActivityEngine: Sendable {
    var queue: any ActivityQueueing
    var pusher: any ActivityPushing
    var owner: String
    var clock: any DeliveryClock
    var random: any RandomSource
    var wake: WakeSignal
    var retrySchedule = RetrySchedule(initialDelay: .seconds(1), maximumDelay: .seconds(300), maximumAttempts: 12)
    var batchSize = 500
    var lease: Duration = .seconds(60)
    /// How long an idle engine waits for a wake before claiming again.
    var idlePoll: Duration = .seconds(5)
    var metrics: MetricsRegistry
    var logger: Logger

    package init(queue: any ActivityQueueing, pusher: any ActivityPushing, owner: String, wake: WakeSignal,
                clock: any DeliveryClock = SystemDeliveryClock(), random: any RandomSource = SystemRandomSource(),
                metrics: MetricsRegistry, logger: Logger) {
        self.queue = queue
        self.pusher = pusher
        self.owner = owner
        self.wake = wake
        self.clock = clock
        self.random = random
        self.metrics = metrics
        self.logger = logger
    }

    /// Runs until `stop` is requested (or the task is cancelled), then hands back what it holds.
    package func run(until stop: GracefulStop = GracefulStop()) async {
        logger.info("activity engine started")
        let (queue, owner, batchSize, lease) = (queue, owner, batchSize, lease)
        await loop.run(
            until: stop, claim: { try await queue.claim(owner: owner, limit: batchSize, lease: lease) },
            work: { claims, stop in await process(claims, stop: stop) }, write: { results in await record(results) },
            release: { try await queue.release(owner: owner) })
        logger.info("activity engine stopped")
    }

    private var loop: LeasedWorkLoop<ClaimedActivityPush> {
        LeasedWorkLoop(what: "activity pushes", clock: clock, logger: logger, idlePoll: idlePoll, wake: wake)
    }

    /// What became of each claim: stale ones dropped, the rest pushed per route and event. Once
    /// `stop` is requested the pushes not started are left out, held until the engine hands them
    /// back.
    func process(_ claims: [ClaimedActivityPush], stop: GracefulStop = GracefulStop()) async -> [ActivityPushResult] {
        var results: [ActivityPushResult] = []
        var groups: [Group: [ClaimedActivityPush]] = [:]
        for claim in claims {
            if claim.isStale {
                results.append(ActivityPushResult(claim: claim, change: .dropped))
            } else if claim.token.isEmpty {
                results.append(ActivityPushResult(claim: claim, change: .failed(error: "no push-to-start token for \(claim.activityType)")))
            } else {
                groups[Group(claim), default: []].append(claim)
            }
        }
        let pusher = self.pusher
        let now = clock.now()
        let routed = groups
        let answered = await stop.interrupting { await withTaskGroup(of: [(ClaimedActivityPush, PushOutcome)].self) { tasks in
            for (group, members) in routed {
                tasks.addTask {
                    let tokens = members.map(\.token)
                    let first = members[0]
                    let outcomes: [PushOutcome]
                    if group.route.platform == .ios {
                        outcomes = await pusher.pushAPNs({ topic throws(PushMessageError) in try Self.apnsRequest(first, appTopic: topic) },
                                                         route: group.route, tokens: tokens)
                    } else {
                        outcomes = await pusher.pushData(Self.dataMessage(first, now: now), route: group.route, tokens: tokens)
                    }
                    return Array(zip(members, outcomes))
                }
            }
            var all: [(ClaimedActivityPush, PushOutcome)] = []
            for await part in tasks { all += part }
            return all
        } }
        var generator = RandomSourceGenerator(source: random)
        for (claim, outcome) in answered {
            // Not pushed because the engine is stopping: left held, handed back at the end.
            if outcome == .deferred && stop.shouldStop { continue }
            metrics.increment(Metric.activityPushesTotal, labels: ["kind": claim.kind.rawValue, "outcome": outcome.label])
            results.append(ActivityPushResult(claim: claim, change: change(after: outcome, for: claim, now: now, random: &generator)))
        }
        return results
    }

    /// The change `outcome` makes to a claim.
    func change(after outcome: PushOutcome, for claim: ClaimedActivityPush, now: Date, random: inout some RandomNumberGenerator) -> ActivityPushResult.Change {
        func retry(_ reason: String, after: Duration?) -> ActivityPushResult.Change {
            // An activity's event has no expiry of its own: retries stop after the schedule's attempts.
            guard let at = retrySchedule.nextAttempt(after: claim.attempts, now: now, expiresAt: .distantFuture, perishable: false,
                                                     serviceDelay: after, random: &random)
            else { return .failed(error: "gave up after \(claim.attempts) attempts: \(reason)") }
            return .retry(at: at, error: reason)
        }
        switch outcome {
        case .accepted: return .sent
        case .tokenDead(let reason, _): return .tokenDead(reason: reason)
        case .retry(let reason, let after, _): return retry(reason, after: after)
        case .refreshCredentials(let reason): return retry(reason, after: nil)
        case .failed(let reason): return .failed(error: reason)
        case .expired, .deferred: return retry(outcome.label, after: nil)
        }
    }

    /// The APNs request of a claim's event (or widget refresh) on the app's topic.
    static func apnsRequest(_ claim: ClaimedActivityPush, appTopic: String) throws(PushMessageError) -> APNsPreparedMessage {
        if claim.kind == .widgets { return LiveActivityRequests.widgets(appTopic: appTopic) }
        if claim.kind == .controls { return LiveActivityRequests.controls(appTopic: appTopic) }
        return try LiveActivityRequests.activity(event(claim), appTopic: appTopic)
    }

    /// The data message of a claim for an Android device.
    static func dataMessage(_ claim: ClaimedActivityPush, now: Date) -> PushMessage {
        let expiresAt = now.addingTimeInterval(3600)
        // Controls are queued for iPhones only; widgets go to Android as a data message.
        guard !claim.kind.isRefresh else { return LiveActivityRequests.androidWidgets(expiresAt: expiresAt) }
        return LiveActivityRequests.androidData(activityId: claim.activityId, event: event(claim), expiresAt: expiresAt)
    }

    static func event(_ claim: ClaimedActivityPush) -> LiveActivityEvent {
        let kind: LiveActivityEvent.Kind = switch claim.kind {
        case .start: .start
        case .end: .end
        case .update, .widgets, .controls: .update
        }
        let content = claim.content
        return LiveActivityEvent(
            kind: kind, timestamp: claim.timestamp, contentState: content.contentState ?? "{}", alertTitle: content.alertTitle,
            alertBody: content.alertBody, staleDate: content.staleDate, dismissalDate: content.dismissalDate,
            attributesType: kind == .start ? claim.activityType : nil, attributes: kind == .start ? (claim.attributes ?? "{}") : nil,
            relevanceScore: content.relevanceScore, priority: content.priority)
    }

    private func record(_ results: [ActivityPushResult]) async {
        for result in results {
            let claim = result.claim
            var fields = ["activity": LogText.escaped(claim.activityId, limit: 128), "kind": claim.kind.rawValue,
                          "user": claim.device.userId, "device": String(claim.device.id)]
            switch result.change {
            case .failed(let error):
                fields["error"] = LogText.escaped(error, limit: 200)
                logger.warning("activity push failed for good", metadata: fields)
            case .tokenDead(let reason):
                fields["reason"] = reason
                logger.info("activity token refused by the push service; only that token is removed", metadata: fields)
            case .dropped:
                logger.info("activity event dropped: the device already has a newer one", metadata: fields)
            case .sent, .retry:
                break
            }
        }
        let (queue, owner) = (queue, owner)
        await loop.record { try await queue.record(results, owner: owner) }
    }

    /// Claims pushed together: one route, one event (or widget refresh) and one token kind.
    struct Group: Hashable {
        var route: PushRoute
        var activityId: String
        var kind: ActivityPushKind
        var timestamp: Int64

        init(_ claim: ClaimedActivityPush) {
            route = claim.device.route
            activityId = claim.activityId
            kind = claim.kind
            timestamp = claim.timestamp
        }
    }
}
