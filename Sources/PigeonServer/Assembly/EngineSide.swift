import BankProxy
import Foundation
import PigeonConfiguration
import PigeonConsole
import PigeonCore
import PigeonDelivery
import PigeonStore
import PostgresDriver
import PushTransport

/// The wake signals between the two sides: the request side signals them as it stores work, the
/// engines wait on them instead of their next poll.
struct GatewayWakes: Sendable {
    /// A stored urgent send wakes the delivery engine's urgent lane.
    let deliveries: QueueWake
    /// A stored send's deadline, for the expiry watcher to report it when it passes.
    let deadlines = DeadlineNotes()
    /// A queued Live Activity event, widget refresh or update token wakes the activity engine.
    let activities = WakeSignal()
    /// A report written (an expiry at its deadline, a code that reached nobody) wakes the outbox
    /// sender.
    let reports = WakeSignal()

    init(urgentPriority: Int) {
        deliveries = QueueWake(urgentPriority: urgentPriority)
    }
}

/// The background side composed once from the configuration: the delivery, Wallet and Live
/// Activity engines, the outbox sender, sweeps, the expiry watcher and the samplers, each on the
/// engine's pools (the urgent lane on a pool of its own), as the services the lifecycle starts
/// and stops (each runs until its ``GracefulStop``).
struct EngineSide {
    /// The services, started together once every resource is open.
    let services: [Lifecycle.Service]
    /// The lease owner name of the delivery engine's claims, when it runs (the stop hands back
    /// what that owner still holds).
    let deliveryOwner: String?

    /// The console's background work, when the console is served.
    struct ConsoleWork {
        var activity: PushActivity
        var auditTrail: PostgresAuditTrail
    }

    init(configuration: GatewayConfiguration, enginePool: PostgresPool, urgentPool: PostgresPool, transports: PushTransports,
         passPushers: PassPushers, bank: BankProxyClient?, wakes: GatewayWakes, console: ConsoleWork?, metrics: MetricsRegistry,
         logger: Logger) {
        let identifiers = configuration.identifiers
        let queue = DeliveryQueue(pool: enginePool)
        let deliveryEngine: DeliveryEngine?
        if transports.senders.isEmpty {
            logger.warning("no push service configured (apnsKeyPath/apnsCertificatePath, fcmServiceAccountPath): deliveries stay QUEUED")
            deliveryEngine = nil
        } else {
            deliveryEngine = DeliveryEngine(
                configuration: .init(configuration.delivery), owner: Self.owner(""),
                services: .init(queue: queue, notifications: NotificationStore(pool: enginePool, identifiers: identifiers),
                                devices: SubscriptionStore(pool: enginePool, identifiers: identifiers, reachPrecision: configuration.reachPrecision),
                                senders: transports.senders, urgentSenders: transports.urgentSenders, wake: wakes.deliveries,
                                confidential: ConfidentialPushing(sealer: OpenSSLContentSealer(), alertText: configuration.confidential.alertText),
                                urgentStores: LaneStores(queue: DeliveryQueue(pool: urgentPool),
                                                         notifications: NotificationStore(pool: urgentPool, identifiers: identifiers),
                                                         devices: SubscriptionStore(pool: urgentPool, identifiers: identifiers, reachPrecision: configuration.reachPrecision)),
                                reportsWritten: wakes.reports),
                logger: logger.withLabel("pigeon.delivery"), metrics: metrics)
        }
        if !passPushers.isConfigured {
            logger.notice("no APNs credentials for Wallet passes (passType.<id>.certificatePath or apnsKeyPath): pass update pushes will fail")
        }
        let passEngine = PassUpdateEngine(
            queue: PassStore(pool: enginePool), pusher: passPushers,
            policy: PassUpdatePolicy(fetchTimeout: .seconds(configuration.passes.fetchTimeoutSeconds), fetchRetries: configuration.passes.fetchRetries),
            owner: Self.owner("-passes"), metrics: metrics, logger: logger.withLabel("pigeon.passes"))
        let activityEngine = ActivityEngine(
            queue: ActivityStore(pool: enginePool, identifiers: identifiers),
            pusher: ActivityPushers(apns: transports.activityAPNs, senders: transports.urgentSenders),
            owner: Self.owner("-activities"), wake: wakes.activities, metrics: metrics, logger: logger.withLabel("pigeon.activities"))
        let metricsSampler = MetricsSampler(queue: queue, outbox: Outbox(pool: enginePool), metrics: metrics, logger: logger.withLabel("pigeon.metrics"))
        let sweeps = SweepRunner(
            sweeps: Sweeps(pool: enginePool), interval: .seconds(configuration.expirySweepIntervalSeconds),
            deviceExpiry: .milliseconds(configuration.deviceExpiredPeriodMillis),
            retention: Retention(pool: enginePool), retentionDays: configuration.retentionDays,
            metrics: metrics, logger: logger.withLabel("pigeon.sweep"))
        let expiryWatcher = ExpiryWatcher(jobs: Sweeps(pool: enginePool), notes: wakes.deadlines, outboxWake: wakes.reports,
                                          metrics: metrics, logger: logger.withLabel("pigeon.sweep"))
        let sender = bank.map {
            OutboxSender(outbox: Outbox(pool: enginePool, logger: logger.withLabel("pigeon.outbox")), bank: $0,
                         lease: .seconds(2 * configuration.bankProxyTimeoutSeconds + 10),
                         maxAge: .seconds(3600 * configuration.reportMaxAgeHours), wake: wakes.reports,
                         metrics: metrics, logger: logger.withLabel("pigeon.outbox"))
        }
        if sender == nil {
            logger.warning("sbiOutboundWebServiceURL is not set: reports to the bank wait in the outbox and new devices cannot register")
        }
        let workers = configuration.delivery.workers
        let fleetCheck = FleetCheck(subscriptions: SubscriptionStore(pool: enginePool, identifiers: identifiers),
                                    served: Set(transports.senders.keys), logger: logger.withLabel("pigeon.delivery"))
        var services: [Lifecycle.Service] = [
            .init("fleet check") { await fleetCheck.run(until: $0) },
            .init("metrics sampler") { await metricsSampler.run(until: $0) },
            .init("Wallet pass engine") { await passEngine.run(until: $0) },
            .init("Live Activity engine") { await activityEngine.run(until: $0) },
            .init("sweeps") { await sweeps.run(until: $0) },
            .init("expiry watcher") { await expiryWatcher.run(until: $0) },
        ]
        if let deliveryEngine { services.append(.init("delivery engine") { await deliveryEngine.run(workers: workers, until: $0) }) }
        if let console {
            let activity = console.activity
            services.append(.init("console push activity") { await activity.run(until: $0) })
            let auditDays = configuration.console.auditRetentionDays
            let housekeeping = ConsoleHousekeeping(expireAudit: { [auditTrail = console.auditTrail] in try await auditTrail.expire(olderThanDays: auditDays) },
                                                   logger: logger.withLabel("pigeon.console"))
            services.append(.init("console audit retention") { await housekeeping.run(until: $0) })
        }
        if let sender { services.append(.init("outbox sender") { await sender.run(until: $0) }) }
        self.services = services
        deliveryOwner = deliveryEngine?.owner
    }

    /// A lease owner name unique to this process and start: host, process id, `role`, a random suffix.
    private static func owner(_ role: String) -> String {
        "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)\(role)-\(UUID().uuidString.prefix(8))"
    }
}
