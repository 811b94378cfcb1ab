import Foundation
import PigeonCore
import PigeonDomain
import PushCore

/// Sends QUEUED deliveries: claims a batch under lease (several gateway processes never claim the
/// same row), pushes to every subscribed device of each recipient through the push service of
/// its platform with a bounded number of pushes in flight, decides each delivery's next state as
/// soon as its pushes are done, and hands it to an ``OutcomeRecorder`` that writes outcomes in
/// small group commits. Runs until its ``GracefulStop`` is requested, then stops as CONTRACT §10
/// says, its task alive: it claims nothing more, starts no push (the push batches are cancelled,
/// and the senders answer the pushes not started ``PushOutcome/deferred``), hands those
/// deliveries back to the queue at once, lets the pushes already on the wire finish and writes
/// their outcomes. Cancelling its task is the hard stop: what is not written then is left to the
/// lease, or to the hand-back of everything this owner holds.
///
/// Two lanes: urgent deliveries (priority at or above `urgentPriority`: one-time codes, payment
/// alerts) are claimed by loops of their own, woken at once by a send (``QueueWake``), and pushed
/// through senders of their own (their own connections), so a blast already in flight never
/// stands in front of a code. Each lane holds at most what it can have in flight plus one batch
/// (``ClaimAllowance``), and a delivery whose time ran out while it waited is never pushed: it
/// takes the expiry path.
///
/// Everything the engine touches comes in through small protocols (``DeliveryQueueing``,
/// ``NotificationSource``, ``DeviceDirectory``, ``PushSending``, ``DeliveryClock``,
/// ``RandomSource``), so each of its behaviours is tested with in-memory fakes.
package final class DeliveryEngine: Sendable {
    /// How the engine claims, pushes and commits.
    package struct Configuration: Sendable {
        package var batchSize = 500
        package var lease: Duration = .seconds(60)
        /// The wait before claiming again when the queue had nothing due, or (in a lane that
        /// polls) fewer deliveries than the claim asked for.
        package var idlePoll: Duration = .milliseconds(200)
        /// The wait before claiming again after a claim failed (the database away).
        package var claimRetryDelay: Duration = .seconds(1)
        /// Pushes in flight in the lane of other deliveries, shared by its workers.
        package var maxConcurrentPushes = 256
        /// Deliveries of this priority or higher take the urgent lane; `nil`: one lane for all.
        package var urgentPriority: Int? = 10
        /// The urgent lane: claim loops, deliveries per claim, pushes in flight.
        package var urgentWorkers = 2
        package var urgentBatchSize = 50
        package var urgentMaxConcurrentPushes = 64
        /// The urgent lane's lease, at most ``lease``: a code claimed by a process that died is
        /// claimed again while it can still be used, not a minute later.
        package var urgentLease: Duration = .seconds(20)
        /// A push service whose pushes wait this long for an answer (or for a stream) is slow:
        /// its pushes beyond those in flight go back to the queue instead of waiting in memory.
        package var slowPushAfter: Duration = .seconds(5)
        /// How long a delivery handed back unpushed waits before it can be claimed again.
        package var handBackDelay: Duration = .seconds(1)
        package var schedule = RetrySchedule()
        /// A group of outcomes is written when this many are waiting ...
        package var commitSize = 200
        /// ... or this long after the first of them finished.
        package var commitInterval: Duration = .milliseconds(5)

        package init() {}
    }

    /// What the engine works with.
    package struct Services: Sendable {
        package var queue: any DeliveryQueueing
        package var notifications: any NotificationSource
        package var devices: any DeviceDirectory
        /// The push service of each route (platform, app, environment); a device whose route
        /// has none fails.
        package var senders: [PushRoute: any PushSending]
        /// The urgent lane's sender of each route (connections a blast cannot occupy); a route
        /// missing here uses its sender of ``senders``.
        package var urgentSenders: [PushRoute: any PushSending]
        /// Wakes the urgent lane when a send is stored.
        package var wake: QueueWake?
        package var clock: any DeliveryClock
        package var random: any RandomSource
        /// How confidential notifications are sealed and announced (CONTRACT §8).
        package var confidential: ConfidentialPushing
        /// The urgent lane's database seams (a pool of its own, so a code's claim and look-ups
        /// never wait for a connection behind a blast's work); `nil`: the lane shares the others'.
        package var urgentStores: LaneStores?
        /// Signalled after outcomes that may have queued a report to the bank (a delivery that
        /// reached nobody, CONTRACT §10): wakes the outbox sender.
        package var reportsWritten: WakeSignal?

        /// The database seams ``queue``, ``notifications`` and ``devices`` as one lane's.
        var stores: LaneStores { LaneStores(queue: queue, notifications: notifications, devices: devices) }

        package init(queue: any DeliveryQueueing, notifications: any NotificationSource, devices: any DeviceDirectory,
                    senders: [PushRoute: any PushSending], urgentSenders: [PushRoute: any PushSending] = [:], wake: QueueWake? = nil,
                    clock: any DeliveryClock = SystemDeliveryClock(), random: any RandomSource = SystemRandomSource(),
                    confidential: ConfidentialPushing = ConfidentialPushing(sealer: nil), urgentStores: LaneStores? = nil,
                    reportsWritten: WakeSignal? = nil) {
            self.reportsWritten = reportsWritten
            self.confidential = confidential
            self.urgentStores = urgentStores
            self.queue = queue
            self.notifications = notifications
            self.devices = devices
            self.senders = senders
            self.urgentSenders = urgentSenders
            self.wake = wake
            self.clock = clock
            self.random = random
        }

        /// One sender per platform, for the default app's production devices.
        package init(queue: any DeliveryQueueing, notifications: any NotificationSource, devices: any DeviceDirectory,
                    senders: [Platform: any PushSending], urgentSenders: [Platform: any PushSending] = [:], wake: QueueWake? = nil,
                    clock: any DeliveryClock = SystemDeliveryClock(), random: any RandomSource = SystemRandomSource()) {
            func routes(_ senders: [Platform: any PushSending]) -> [PushRoute: any PushSending] {
                Dictionary(uniqueKeysWithValues: senders.map { (PushRoute(platform: $0.key), $0.value) })
            }
            self.init(queue: queue, notifications: notifications, devices: devices, senders: routes(senders),
                      urgentSenders: routes(urgentSenders), wake: wake, clock: clock, random: random)
        }
    }

    private let configuration: Configuration
    private let services: Services
    /// The lease owner name of this process's claims.
    package let owner: String
    private let recorder: OutcomeRecorder
    private let logger: Logger
    private let metrics: MetricsRegistry

    package init(configuration: Configuration, owner: String, services: Services, logger: Logger, metrics: MetricsRegistry) {
        self.configuration = configuration
        self.services = services
        self.owner = owner
        self.logger = logger
        self.metrics = metrics
        recorder = OutcomeRecorder(
            owner: owner, queue: services.queue, devices: services.devices, clock: services.clock,
            settings: .init(commitSize: configuration.commitSize, commitInterval: configuration.commitInterval),
            reportsWritten: services.reportsWritten, logger: logger, metrics: metrics)
    }

    /// The lanes of this engine: urgent and the others, or one for all.
    func lanes(workers: Int) -> [DeliveryLane] {
        let bulkWorkers = max(1, workers)
        guard let urgent = configuration.urgentPriority else {
            return [DeliveryLane(name: "all", band: .all, batchSize: configuration.batchSize, window: configuration.maxConcurrentPushes,
                                 workers: bulkWorkers, senders: services.senders, stores: services.stores,
                                 lease: configuration.lease, slowAfter: configuration.slowPushAfter)]
        }
        return [
            DeliveryLane(name: "urgent", band: .atLeast(urgent), batchSize: configuration.urgentBatchSize,
                         window: configuration.urgentMaxConcurrentPushes, workers: configuration.urgentWorkers,
                         senders: services.senders.merging(services.urgentSenders) { _, urgent in urgent },
                         stores: services.urgentStores ?? services.stores,
                         lease: min(configuration.urgentLease, configuration.lease), slowAfter: configuration.slowPushAfter,
                         wake: services.wake?.urgent),
            DeliveryLane(name: "bulk", band: .below(urgent), batchSize: configuration.batchSize, window: configuration.maxConcurrentPushes,
                         workers: bulkWorkers, senders: services.senders, stores: services.stores,
                         lease: configuration.lease, slowAfter: configuration.slowPushAfter),
        ]
    }

    /// Runs the lanes' claim-and-send loops (`workers` for the lane of other deliveries) and the
    /// outcome writer until `stop` is requested (or the task is cancelled): while one batch's
    /// pushes are in flight, another is being claimed. After a graceful stop, every outcome of
    /// the pushes that were in flight is written before this returns.
    package func run(workers: Int, until stop: GracefulStop = GracefulStop()) async {
        let lanes = lanes(workers: workers)
        logger.info("delivery engine started", metadata: [
            "owner": owner, "lanes": lanes.map { "\($0.name) (\($0.band), \($0.workers) workers)" }.joined(separator: ", ")])
        // While the lanes wind down (the pushes on the wire finishing), outcomes go on being
        // written in groups, not held until the end: a stop whose deadline passed would hand
        // back, and so repeat, pushes already made.
        let recorder = self.recorder
        async let writing: Void = recorder.run()
        await withTaskGroup(of: Void.self) { group in
            for lane in lanes {
                for _ in 0..<lane.workers {
                    group.addTask { await self.work(lane, stop: stop) }
                }
            }
        }
        recorder.finish()
        await writing
        await recorder.drain()
        logger.info("delivery engine stopped", metadata: ["owner": owner])
    }

    /// One claim loop of `lane`, until `stop`: claims a batch, looks up its notifications and
    /// devices, hands back what a slow push service cannot take now (``RouteHolds``), and starts
    /// the rest's pushes while it claims the next batch — the lane's allowance bounds how many
    /// batches are in hand, so a batch waiting on a slow service never holds up the loop.
    private func work(_ lane: DeliveryLane, stop: GracefulStop) async {
        var cache: [Int64: PushNotification] = [:]
        await withDiscardingTaskGroup { group in
            while !stop.shouldStop {
                // Room is usually free at once: only a wait for it needs to be interruptible.
                var reserved = lane.allowance.reserveIfRoom() ?? 0
                if reserved == 0 { reserved = await stop.interrupting { await lane.allowance.reserve() } }
                guard !stop.shouldStop else {
                    lane.allowance.release(reserved)
                    break
                }
                let claims: [ClaimedDelivery]
                do {
                    claims = try await lane.stores.queue.claim(owner: owner, limit: reserved, lease: lane.lease, band: lane.band)
                } catch is CancellationError {
                    // The hard stop: nothing was claimed.
                    lane.allowance.release(reserved)
                    break
                } catch {
                    lane.allowance.release(reserved)
                    logger.warning("cannot claim deliveries", metadata: ["lane": lane.name, "error": "\(error)"])
                    await stop.sleep(for: configuration.claimRetryDelay, on: services.clock)
                    continue
                }
                lane.allowance.release(reserved - claims.count)
                guard !stop.shouldStop else {
                    // Claimed as the stop came: back to the queue unpushed, at once.
                    await handBack(claims, lane: lane, stopping: true)
                    break
                }
                guard !claims.isEmpty else {
                    if let wake = lane.wake {
                        await stop.wait(for: wake, upTo: configuration.idlePoll, on: services.clock)
                    } else {
                        await stop.sleep(for: configuration.idlePoll, on: services.clock)
                    }
                    continue
                }
                if cache.count > 1000 { cache.removeAll(keepingCapacity: true) }
                guard let plan = await prepare(claims, lane: lane, cache: &cache) else { continue }
                let (admitted, handedBack) = await admit(plan, lane: lane, stop: stop)
                if let admitted {
                    group.addTask { await self.push(admitted, lane: lane, stop: stop) }
                }
                // Claim again at once only while that can take more. Not when the whole batch
                // was for a slow service: that would only cycle the queue through this process
                // (some admitted: claim on, so a service wrongly thought slow on a loaded machine
                // keeps its pace). Nor, in a lane that polls, when the claim drained the queue
                // (fewer than it asked for): sends arriving one by one are then claimed, looked
                // up and written in batches at the poll, not a few rows a round trip each paying
                // a claim's, a look-up's and a write's fixed cost. A blast's claims are full and
                // go on at once; the woken urgent lane never waits here.
                let allHandedBack = handedBack == claims.count
                let drainedWhilePolling = lane.wake == nil && claims.count < reserved
                if allHandedBack || drainedWhilePolling {
                    await stop.sleep(for: configuration.idlePoll, on: services.clock)
                }
            }
        }
    }

    /// The pushes of a claimed batch: its notifications (from `cache` where it can) and its
    /// users' devices looked up. `nil` when a look-up failed: the batch is left to its lease.
    private func prepare(_ claims: [ClaimedDelivery], lane: DeliveryLane, cache: inout [Int64: PushNotification]) async -> PushPlan? {
        let missing = Set(claims.map(\.notificationKey)).filter { cache[$0] == nil }
        if !missing.isEmpty {
            do {
                // One look-up for the batch, not one per notification.
                cache.merge(try await lane.stores.notifications.notifications(keys: Array(missing))) { _, loaded in loaded }
            } catch {
                // A database hiccup must not fail deliveries: leave the batch to its lease.
                lane.allowance.release(claims.count)
                logger.warning("cannot load notifications; the batch will be claimed again", metadata: ["error": "\(error)"])
                return nil
            }
        }
        do {
            let devices = try await lane.stores.devices.devices(users: Array(Set(claims.map(\.userId))))
            let plan = PushPlan(claims: claims, notifications: cache, devices: devices, key: lane.stores.devices.key(for:),
                                confidential: services.confidential)
            for (count, pushes) in plan.confidentialCounts {
                metrics.increment(Metric.confidentialPushesTotal, labels: ["service": count.service, "mode": count.mode], by: Double(pushes))
            }
            for failure in plan.sealingFailures {
                logger.warning("cannot seal a confidential push to a device's key; the device is told to fetch the content", metadata: [
                    "device": String(failure.device.id), "platform": failure.device.platform.rawValue, "reason": failure.reason])
            }
            return plan
        } catch {
            lane.allowance.release(claims.count)
            logger.warning("cannot load devices; the batch will be claimed again", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Admits each delivery of `plan` on the routes of its pushes, or hands it back to the queue
    /// when one of them is a slow service already holding its share. Returns the plan of the
    /// admitted deliveries (`nil` when none was) and how many were handed back.
    private func admit(_ plan: PushPlan, lane: DeliveryLane, stop: GracefulStop) async -> (PushPlan?, Int) {
        let routes = plan.routesOfClaims
        let admission = lane.holds.admit(routes, now: services.clock.now())
        for route in admission.turnedSlow {
            logger.warning("push service slow: its deliveries beyond those in flight go back to the queue until it answers in time", metadata: [
                "route": "\(route)", "lane": lane.name, "in flight": String(lane.holds.cap)])
        }
        for route in admission.recovered {
            logger.info("push service answering in time again", metadata: ["route": "\(route)", "lane": lane.name])
        }
        let refused = plan.claims.indices.filter { !admission.admitted[$0] }
        guard !refused.isEmpty else { return (plan, 0) }
        await handBack(refused.map { plan.claims[$0] }, lane: lane, stopping: stop.shouldStop)
        let kept = plan.claims.indices.filter { admission.admitted[$0] }
        guard !kept.isEmpty else { return (nil, refused.count) }
        return (plan.keeping(kept), refused.count)
    }

    /// Gives `deliveries` back to the queue unpushed, due again after the hand-back delay (at
    /// once when the engine is `stopping`: no claim of this process would take them again), and
    /// frees their room in the lane.
    private func handBack(_ deliveries: [ClaimedDelivery], lane: DeliveryLane, stopping: Bool, error: String? = nil) async {
        guard !deliveries.isEmpty else { return }
        let delay = stopping ? .zero : configuration.handBackDelay
        do {
            try await lane.stores.queue.handBack(deliveries, owner: owner, delay: delay, error: error)
            metrics.increment(Metric.deliveriesHandedBackTotal, labels: ["lane": lane.name], by: Double(deliveries.count))
            if stopping {
                logger.notice("stopping: deliveries not yet pushed handed back to the queue", metadata: [
                    "lane": lane.name, "deliveries": String(deliveries.count)])
            }
        } catch {
            // Their lease ends them in the queue again; they were not pushed.
            logger.warning("cannot hand deliveries back; they are claimed again when their lease ends", metadata: [
                "deliveries": String(deliveries.count), "error": "\(error)"])
        }
        lane.allowance.release(deliveries.count)
    }

    /// Pushes one admitted batch; each delivery is decided and handed to the recorder when its
    /// last push is done. A delivery whose time ran out is decided without a push; one whose
    /// every push could not start in time (a slow service) goes back to the queue. Once `stop`
    /// is requested the batch starts no push: those not started come back deferred and go back
    /// to the queue at once.
    private func push(_ plan: PushPlan, lane: DeliveryLane, stop: GracefulStop) async {
        let routes = plan.routesOfClaims
        var deferred: [ClaimedDelivery] = []
        // Deliveries whose every device is on a route this gateway does not serve (another
        // gateway of the fleet may): handed back with the reason, by route.
        var unserved: [String: [ClaimedDelivery]] = [:]
        // Counted for the batch and handed to the registry once, not per push or delivery.
        var tally: [PushTally: Double] = [:]
        var durations: [PushRoute: [Double]] = [:]
        var decided: [DeliveryState: Double] = [:]
        defer { report(tally, durations: durations, decided: decided) }
        for index in plan.claimsWithoutPushes {
            finish(plan, index, lane: lane, routes: routes[index], outcomes: [], deferred: &deferred, unserved: &unserved, decided: &decided)
        }
        var outcomes = [[(device: Device, outcome: PushOutcome)]](repeating: [], count: plan.claims.count)
        // What waited in memory past its time is never handed to a sender.
        let now = services.clock.now()
        for (index, push) in plan.pushes.enumerated() where plan.claims[push.claim].expiresAt <= now {
            take(index, PushBatchResult(index: index, outcome: .expired, duration: nil))
        }
        // Each route's pushes go to its sender as one batch; results come back through one
        // channel as they arrive, with no task per push. A push no stream took within
        // `slowPushAfter` comes back unsent (a slow service), instead of waiting in memory.
        let results = ResultChannel<(push: Int, result: PushBatchResult)>()
        let startBy = now.addingTimeInterval(lane.holds.slowAfter)
        let batches = plan.batches(startBy: startBy) { plan.claims[plan.pushes[$0].claim].expiresAt > now }
        let senders = lane.senders
        let window = lane.window
        let total = batches.reduce(0) { $0 + $1.pushes.count }
        // Cancelled when the stop is requested: the senders then start nothing more.
        async let sending: Void = stop.interrupting { await withTaskGroup(of: Void.self) { group in
            for (route, batch, pushes) in batches {
                guard let sender = senders[route] else {
                    // Not this gateway's route (a fleet whose configurations differ, for a
                    // while): not pushed, left for a gateway that serves it.
                    for (index, push) in pushes.enumerated() {
                        results.yield((push, PushBatchResult(index: index, outcome: .deferred, duration: nil)))
                    }
                    continue
                }
                // The pushes in flight are shared out between the routes by their numbers.
                let share = max(1, window * pushes.count / max(1, total))
                group.addTask {
                    await sender.send(batch, maxInFlight: share) { result in results.yield((pushes[result.index], result)) }
                }
            }
            await group.waitForAll()
            results.finish()
        } }
        while let arrived = await results.next() {
            for (index, result) in arrived { take(index, result) }
            if !deferred.isEmpty {
                await handBack(deferred, lane: lane, stopping: stop.shouldStop)
                deferred.removeAll()
            }
            for (reason, deliveries) in unserved { await handBack(deliveries, lane: lane, stopping: stop.shouldStop, error: reason) }
            unserved.removeAll()
        }
        await sending

        func take(_ index: Int, _ result: PushBatchResult) {
            let push = plan.pushes[index]
            let route = push.device.route
            var outcome = result.outcome
            // Not started in time while the message still had time: its service is slow.
            let notStarted = outcome == .expired && plan.claims[push.claim].expiresAt > services.clock.now()
            if notStarted { outcome = .deferred }
            let late = result.duration.map { $0.inSeconds >= lane.holds.slowAfter } ?? false
            lane.holds.answered(route, slow: notStarted || late, now: services.clock.now())
            tally[PushTally(route: route, outcome: outcome.label, retryCause: outcome.retryCause), default: 0] += 1
            if let duration = result.duration { durations[route, default: []].append(duration.inSeconds) }
            outcomes[push.claim].append((push.device, outcome))
            if outcomes[push.claim].count == plan.pushCounts[push.claim] {
                finish(plan, push.claim, lane: lane, routes: routes[push.claim], outcomes: outcomes[push.claim], deferred: &deferred,
                       unserved: &unserved, decided: &decided)
            }
        }
    }

    /// Decides the state of claim `index` of `plan` from its push outcomes and hands it over;
    /// one none of whose pushes could start in time joins `deferred`, to go back to the queue.
    /// The state decided is counted in `decided` (first attempts only), for the batch's metrics.
    private func finish(_ plan: PushPlan, _ index: Int, lane: DeliveryLane, routes: Set<PushRoute>,
                        outcomes: [(device: Device, outcome: PushOutcome)], deferred: inout [ClaimedDelivery],
                        unserved: inout [String: [ClaimedDelivery]], decided: inout [DeliveryState: Double]) {
        lane.holds.release(routes)
        let claim = plan.claims[index]
        func unservedReason(_ device: Device) -> String? {
            lane.senders[device.route] == nil ? "no gateway serves \(device.route) (not configured on \(owner))" : nil
        }
        if !outcomes.isEmpty, outcomes.allSatisfy({ $0.outcome == .deferred }) {
            if let reason = outcomes.lazy.compactMap({ unservedReason($0.device) }).first {
                unserved[reason, default: []].append(claim)
            } else {
                deferred.append(claim)
            }
            return
        }
        // Some of its devices were pushed: those not started (a slow service, or a route another
        // gateway serves) are tried again like a failure.
        let outcomes = outcomes.map { entry -> (device: Device, outcome: PushOutcome) in
            guard entry.outcome == .deferred else { return entry }
            return (entry.device, .retry(reason: unservedReason(entry.device) ?? PushOutcome.notStartedReason, after: configuration.handBackDelay,
                                         cause: .slow))
        }
        guard let notification = plan.notifications[claim.notificationKey] else {
            let result = DeliveryResult(delivery: claim, state: .sendingFailed, error: "notification not found")
            decided[result.state, default: 0] += 1
            recorder.add(FinishedDelivery(result: result, deadDevices: [], reachedDevices: [], allowance: lane.allowance))
            return
        }
        var random = RandomSourceGenerator(source: services.random)
        let decision = DeliveryDecision.decide(
            outcomes: outcomes.map { ($0.device.id, $0.outcome) }, alreadySent: claim.alreadySent, attempt: claim.attempt,
            expiresAt: claim.expiresAt,
            perishable: notification.perishable ?? false, now: services.clock.now(), schedule: configuration.schedule,
            random: &random)
        let reached = outcomes.compactMap { entry -> Int64? in
            if case .accepted = entry.outcome { return entry.device.id }
            return nil
        }
        if !claim.alreadySent {
            decided[decision.state, default: 0] += 1
        }
        let devicePushes = Self.devicePushes(outcomes, willRetry: decision.nextAttemptAt != nil)
        logPushes(devicePushes, notification: notification.id, user: claim.userId)
        recorder.add(FinishedDelivery(
            result: DeliveryResult(delivery: claim, state: decision.state, nextAttemptAt: decision.nextAttemptAt,
                                   pendingDevices: decision.pendingDevices, error: decision.error, devices: devicePushes),
            deadDevices: decision.deadDevices, reachedDevices: reached, allowance: lane.allowance))
    }

    /// A line per push an operator can grep: failed attempts and removed devices at info,
    /// accepted pushes at debug; who and which device, never the content or a whole token.
    private func logPushes(_ pushes: [DevicePush], notification: String, user: String) {
        for push in pushes {
            let fields: () -> Logger.Metadata = {
                var metadata: Logger.Metadata = [
                    "notification": LogText.escaped(notification, limit: 100), "user": LogText.escaped(user, limit: 100),
                    "device": LogText.escaped(push.deviceId, limit: 100), "app": push.appId.isEmpty ? "default" : push.appId,
                    "service": push.platform.pushService, "token": push.maskedToken, "state": push.state.rawValue,
                ]
                if let error = push.error { metadata["reason"] = LogText.escaped(error, limit: 300) }
                if let id = push.serviceId { metadata["serviceId"] = LogText.escaped(id, limit: 100) }
                return metadata
            }
            switch push.state {
            case .sent: logger.debug("push accepted", metadata: fields())
            case .invalidToken: logger.info("device removed: its push service declared the token dead", metadata: fields())
            case .retrying, .failed, .expired: logger.info("push failed", metadata: fields())
            }
        }
    }

    /// Each device's outcome as the console shows it; a temporary failure is `RETRYING` only
    /// when the delivery will be tried again, else `FAILED`.
    static func devicePushes(_ outcomes: [(device: Device, outcome: PushOutcome)], willRetry: Bool) -> [DevicePush] {
        outcomes.map { device, outcome in
            let (state, error, serviceId): (DevicePush.State, String?, String?)
            switch outcome {
            case .accepted(let id): (state, error, serviceId) = (.sent, nil, id)
            case .tokenDead(let reason, _): (state, error, serviceId) = (.invalidToken, reason, nil)
            case .retry(let reason, _, _), .refreshCredentials(let reason): (state, error, serviceId) = (willRetry ? .retrying : .failed, reason, nil)
            case .failed(let reason): (state, error, serviceId) = (.failed, reason, nil)
            case .expired: (state, error, serviceId) = (.expired, "its time ran out before it was pushed", nil)
            case .deferred: (state, error, serviceId) = (willRetry ? .retrying : .failed, PushOutcome.notStartedReason, nil)
            }
            return DevicePush(deviceRowId: device.id, deviceId: device.deviceId, platform: device.platform, appId: device.appId,
                              maskedToken: Redaction.token(device.pushToken), state: state, error: error, serviceId: serviceId)
        }
    }

    /// One kind of push outcome, for the batch's counters.
    private struct PushTally: Hashable {
        var route: PushRoute
        var outcome: String
        var retryCause: RetryCause?
    }

    /// Adds a batch's push outcome and retry counts, latencies and decided deliveries to the registry.
    private func report(_ tally: [PushTally: Double], durations: [PushRoute: [Double]], decided: [DeliveryState: Double]) {
        for (state, count) in decided {
            metrics.increment(Metric.deliveriesTotal, labels: ["state": state.rawValue], by: count)
        }
        for (route, values) in durations {
            metrics.observe(Metric.pushDurationSeconds, labels: ["platform": route.platform.rawValue, "app": route.appLabel], values: values)
        }
        for (kind, count) in tally {
            let platform = kind.route.platform.rawValue, app = kind.route.appLabel
            metrics.increment(Metric.pushOutcomesTotal, labels: ["platform": platform, "app": app, "outcome": kind.outcome], by: count)
            if let cause = kind.retryCause {
                metrics.increment(Metric.pushRetriesTotal, labels: ["platform": platform, "app": app, "cause": cause.rawValue], by: count)
            }
        }
    }

}
