import Foundation
import OutboundHTTP
import PigeonConsole
import PigeonCore
import PigeonDomain
import PigeonHTTP
import PigeonStore
import PostgresDriver
import Synchronization

/// What the console's pages show in the gateway, read from PostgreSQL, the metrics and the push
/// clients.
struct ConsoleData: ConsoleSource {
    package let store: ConsoleStore
    package let notifications: NotificationStore
    package let outbox: Outbox
    /// The queue's and the outbox's gauges, sampled every 5 s by ``MetricsSampler``: the
    /// overview shows what `/metrics` shows, without querying them again.
    package let metrics: MetricsRegistry
    package let pool: PostgresPool
    package let migrator: Migrator
    package let activity: PushActivity
    /// The push services' clients.
    package let pushClients: [(service: String, app: String, client: HTTP2Client)]
    /// The HTTPS listeners by address, for their certificates' expiry.
    package let listenerCertificates: LateList<(listener: String, server: HTTPServer)>
    /// The effective configuration, secrets redacted.
    package let settings: [(key: String, value: String)]
    /// Sends the test pushes (the gateway's push senders).
    package let testPusher: @Sendable (String) async throws -> [ConsoleTestPush]

    package init(store: ConsoleStore, notifications: NotificationStore, outbox: Outbox, metrics: MetricsRegistry, pool: PostgresPool, migrator: Migrator, activity: PushActivity, pushClients: [(service: String, app: String, client: HTTP2Client)], listenerCertificates: LateList<(listener: String, server: HTTPServer)>, settings: [(key: String, value: String)],
                 testPusher: @escaping @Sendable (String) async throws -> [ConsoleTestPush]) {
        self.testPusher = testPusher
        self.store = store
        self.notifications = notifications
        self.outbox = outbox
        self.metrics = metrics
        self.pool = pool
        self.migrator = migrator
        self.activity = activity
        self.pushClients = pushClients
        self.listenerCertificates = listenerCertificates
        self.settings = settings
    }

    /// The overview; a database that does not answer is shown as such, not as an error page.
    package func overview() async throws -> ConsoleOverview {
        var overview = ConsoleOverview(
            database: "", databaseUp: false, queueDepth: metrics.gauge(Metric.deliveryQueueDepth),
            oldestDueSeconds: metrics.gauge(Metric.deliveryOldestDueSeconds), outboxDepth: metrics.gauge(Metric.outboxDepth),
            outboxOldestSeconds: metrics.gauge(Metric.outboxOldestAgeSeconds), deadReports: metrics.gauge(Metric.outboxDeadLetters),
            connections: PushClientCounts.summed(pushClients).map { ($0.service, $0.app, $0.opened, $0.restarted) },
            certificates: listenerCertificates.elements.map { ($0.listener, $0.server.certificateExpiry) },
            minutes: activity.lastHour())
        do {
            let pending = try await migrator.pending(pool)
            overview.databaseUp = true
            overview.database = pending.isEmpty
                ? "reachable; schema current (migration \(migrator.migrations.last?.version ?? 0))"
                : "reachable; migrations pending: \(pending.map(String.init).joined(separator: ", "))"
        } catch {
            overview.database = "unreachable: \(error)"
        }
        return overview
    }

    package func notification(_ id: String, page: Int) async throws -> ConsoleNotificationView? {
        guard let notification = try await notifications.notification(id: id, recipients: false),
              let recipients = try await store.recipients(notificationId: id, offset: ConsolePaging.offset(of: page),
                                                          limit: ConsolePaging.pageSize)
        else { return nil }
        return ConsoleNotificationView(notification: notification, total: recipients.total, sentAt: recipients.sentAt, recipients: recipients.page)
    }

    package func user(_ user: String) async throws -> ConsoleUserView? {
        guard !user.isEmpty else { return nil }
        return ConsoleUserView(devices: try await store.devices(user: user), pending: try await store.pendingRegistrations(user: user),
                        recent: try await store.recentNotifications(user: user), removed: try await store.removedDevices(user: user))
    }

    package func outbox(page: Int) async throws -> ConsoleOutboxView {
        let page = ConsolePaging.clamped(page)
        let waiting = try await store.waitingReports(offset: ConsolePaging.offset(of: page), limit: ConsolePaging.pageSize)
        return ConsoleOutboxView(page: page, total: waiting.total, waiting: waiting.page, dead: try await outbox.deadLetters(limit: 100))
    }

    package func revoke(deviceId: Int64, reason: String) async throws -> (user: String, device: ConsoleStore.DeviceSummary)? {
        try await store.revoke(deviceId: deviceId, reason: reason)
    }

    package func testPush(user: String) async throws -> [ConsoleTestPush] {
        try await testPusher(user)
    }

    package func requeue(report: Int64) async throws -> Bool {
        try await outbox.requeue([report]).count == 1
    }
}
