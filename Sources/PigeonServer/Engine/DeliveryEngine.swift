import Foundation
import PigeonCore
import PigeonStore
import PushTransport

/// Sends QUEUED deliveries: claims a batch under lease (several gateway processes never claim the
/// same row), pushes to every subscribed device of each recipient through APNs or FCM with a
/// bounded number of pushes in flight, decides each delivery's next state, and records the batch
/// in one statement. Runs until its task is cancelled; a cancelled engine finishes the batch in
/// hand, so nothing is left claimed longer than needed.
final class DeliveryEngine: Sendable {
    struct Configuration: Sendable {
        var batchSize = 500
        var lease: Duration = .seconds(60)
        var idlePoll: Duration = .milliseconds(200)
        var maxConcurrentPushes = 256
        var schedule = RetrySchedule()

        init() {}

        /// The engine settings of `server.conf`.
        init(_ delivery: GatewayConfiguration.Delivery) {
            batchSize = delivery.batchSize
            lease = .seconds(delivery.leaseSeconds)
            maxConcurrentPushes = max(1, delivery.concurrency / delivery.workers)
        }
    }

    private let configuration: Configuration
    /// The lease owner name of this process's claims.
    let owner: String
    private let queue: DeliveryQueue
    private let notifications: NotificationStore
    private let subscriptions: SubscriptionStore
    private let apns: APNsTransport?
    private let fcm: FCMTransport?
    private let logger: Logger
    private let metrics: MetricsRegistry

    init(configuration: Configuration, owner: String, queue: DeliveryQueue, notifications: NotificationStore,
         subscriptions: SubscriptionStore, apns: APNsTransport?, fcm: FCMTransport?, logger: Logger, metrics: MetricsRegistry) {
        self.configuration = configuration
        self.owner = owner
        self.queue = queue
        self.notifications = notifications
        self.subscriptions = subscriptions
        self.apns = apns
        self.fcm = fcm
        self.logger = logger
        self.metrics = metrics
    }

    /// Runs `workers` claim-and-send loops until cancelled: while one batch's pushes are in
    /// flight, another is being claimed or recorded.
    func run(workers: Int) async {
        logger.info("delivery engine started", metadata: ["owner": owner, "workers": String(workers)])
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<max(1, workers) {
                group.addTask { await self.work() }
            }
        }
        logger.info("delivery engine stopped", metadata: ["owner": owner])
    }

    /// One claim-and-send loop, until cancelled.
    private func work() async {
        var cache: [Int64: PushNotification] = [:]
        while !Task.isCancelled {
            let claims: [ClaimedDelivery]
            do {
                claims = try await queue.claim(owner: owner, limit: configuration.batchSize, lease: configuration.lease)
            } catch {
                logger.warning("cannot claim deliveries", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            guard !claims.isEmpty else {
                try? await Task.sleep(for: configuration.idlePoll)
                continue
            }
            if cache.count > 1000 { cache.removeAll(keepingCapacity: true) }
            await process(claims, cache: &cache)
        }
    }

    private func process(_ claims: [ClaimedDelivery], cache: inout [Int64: PushNotification]) async {
        for key in Set(claims.map(\.notificationKey)) where cache[key] == nil {
            do {
                cache[key] = try await notifications.notification(key: key)
            } catch {
                // A database hiccup must not fail deliveries: leave the batch to its lease.
                logger.warning("cannot load a notification; the batch will be claimed again", metadata: ["error": "\(error)"])
                return
            }
        }
        let devices: [String: [Device]]
        do {
            devices = try await subscriptions.devices(users: Array(Set(claims.map(\.userId))))
        } catch {
            logger.warning("cannot load devices; the batch will be claimed again", metadata: ["error": "\(error)"])
            return
        }
        let notificationsById = cache
        let now = Date()
        // Every (claim, device) pair is one push; pairs run with a bounded number in flight.
        // A notification's deliveries share its expiry, so one message serves all of them.
        var jobs: [(claim: Int, device: Device, message: PushMessage)] = []
        var messages: [Int64: PushMessage] = [:]
        for (index, claim) in claims.enumerated() {
            guard let notification = notificationsById[claim.notificationKey] else { continue }
            let message = messages[claim.notificationKey] ?? Self.message(for: notification, expiresAt: claim.expiresAt)
            messages[claim.notificationKey] = message
            for device in devices[subscriptions.key(for: claim.userId)] ?? [] {
                jobs.append((index, device, message))
            }
        }
        var outcomes = [[(device: Int64, outcome: PushOutcome)]](repeating: [], count: claims.count)
        await withTaskGroup(of: (Int, Int64, PushOutcome).self) { group in
            var next = 0
            func addNext() {
                guard next < jobs.count else { return }
                let job = jobs[next]
                next += 1
                group.addTask { [self] in
                    let started = ContinuousClock.now
                    let outcome = await send(job.message, to: job.device)
                    let elapsed = ContinuousClock.now - started
                    metrics.observe("pigeon_push_duration_seconds", labels: ["platform": job.device.platform.rawValue],
                                    Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                    return (job.claim, job.device.id, outcome)
                }
            }
            for _ in 0..<min(configuration.maxConcurrentPushes, jobs.count) { addNext() }
            while let (claim, device, outcome) = await group.next() {
                outcomes[claim].append((device, outcome))
                addNext()
            }
        }
        countOutcomes(jobs.map(\.device), outcomes)
        var random = SystemRandomNumberGenerator()
        var results: [DeliveryResult] = []
        var dead: [Int64] = []
        var delivered: [Int64] = []
        for (index, claim) in claims.enumerated() {
            guard let notification = notificationsById[claim.notificationKey] else {
                results.append(DeliveryResult(delivery: claim, state: .sendingFailed, error: "notification not found"))
                continue
            }
            let decision = DeliveryDecision.decide(
                outcomes: outcomes[index], attempt: claim.attempt, expiresAt: claim.expiresAt,
                perishable: notification.perishable ?? false, now: now, schedule: configuration.schedule, random: &random)
            dead += decision.deadDevices
            delivered += outcomes[index].compactMap { if case .accepted = $0.outcome { $0.device } else { nil } }
            results.append(DeliveryResult(delivery: claim, state: decision.state, nextAttemptAt: decision.nextAttemptAt, error: decision.error))
            metrics.increment("pigeon_deliveries_total", labels: ["state": decision.state.rawValue])
        }
        do {
            // Dead tokens go first: once a state is visible, its device clean-up is done too
            // (and a crash in between only means the batch is claimed again without them).
            try await subscriptions.remove(deviceIds: dead)
            try await subscriptions.markDelivered(deviceIds: delivered)
            try await queue.record(results, owner: owner)
        } catch {
            logger.error("cannot record delivery outcomes; the batch will be claimed again", metadata: ["error": "\(error)", "deliveries": String(results.count)])
        }
        if !dead.isEmpty { logger.info("removed devices with dead push tokens", metadata: ["devices": String(dead.count)]) }
    }

    /// Push outcome and retry counters, added up for the batch before they reach the registry.
    private func countOutcomes(_ devices: [Device], _ outcomes: [[(device: Int64, outcome: PushOutcome)]]) {
        let platforms = Dictionary(devices.map { ($0.id, $0.platform.rawValue) }) { first, _ in first }
        var byOutcome: [[String: String]: Double] = [:]
        var byRetryCause: [[String: String]: Double] = [:]
        for (device, outcome) in outcomes.joined() {
            let platform = platforms[device] ?? "unknown"
            byOutcome[["platform": platform, "outcome": outcome.label], default: 0] += 1
            if let cause = outcome.retryCause { byRetryCause[["platform": platform, "cause": cause], default: 0] += 1 }
        }
        for (labels, count) in byOutcome { metrics.increment("pigeon_push_outcomes_total", labels: labels, by: count) }
        for (labels, count) in byRetryCause { metrics.increment("pigeon_push_retries_total", labels: labels, by: count) }
    }

    private func send(_ message: PushMessage, to device: Device) async -> PushOutcome {
        switch device.platform {
        case .ios:
            guard let apns else { return .failed(reason: "APNs is not configured") }
            return await apns.send(message, to: device.pushToken)
        case .android:
            guard let fcm else { return .failed(reason: "FCM is not configured") }
            return await fcm.send(message, to: device.pushToken)
        }
    }

    /// The push for a notification: its text, badge and sound, with id, type and target for the app.
    static func message(for notification: PushNotification, expiresAt: Date) -> PushMessage {
        var data = ["type": notification.pushContent.type.rawValue]
        if let target = notification.pushContent.target { data["target"] = target }
        let urgent = notification.pushContent.type == .pinCode || (notification.priority ?? 0) > 0
        return PushMessage(
            notificationId: notification.id, text: notification.pushContent.text, badge: notification.pushContent.badge,
            sound: notification.pushContent.sound, data: data, urgency: urgent ? .high : .normal, expiresAt: expiresAt)
    }
}
