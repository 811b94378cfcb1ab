import Foundation
import OutboundHTTP
import PigeonCore
import PigeonDomain
import PigeonHTTP
import PigeonStore
import Synchronization

/// What the console's pages show, read from the stores, the metrics and the push clients.
package struct ConsoleData: Sendable {
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

    package init(store: ConsoleStore, notifications: NotificationStore, outbox: Outbox, metrics: MetricsRegistry, pool: PostgresPool, migrator: Migrator, activity: PushActivity, pushClients: [(service: String, app: String, client: HTTP2Client)], listenerCertificates: LateList<(listener: String, server: HTTPServer)>, settings: [(key: String, value: String)]) {
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

    package struct Overview: Sendable {
        var database: String
        var databaseUp: Bool
        var queueDepth: Double?
        var oldestDueSeconds: Double?
        var outboxDepth: Double?
        var outboxOldestSeconds: Double?
        var deadReports: Double?
        var connections: [(service: String, app: String, opened: Int, restarted: Int)]
        /// Each HTTPS listener (`listen`, `bankListen`) and when the certificate it presents expires.
        var certificates: [(listener: String, expiry: Date?)]
        var minutes: [PushActivity.Minute]
    }

    /// The overview; a database that does not answer is shown as such, not as an error page.
    package func overview() async throws -> Overview {
        var overview = Overview(
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

    package struct NotificationView: Sendable {
        var notification: PushNotification
        var total: Int
        var sentAt: Date
        var recipients: [ConsoleStore.Recipient]
    }

    package static let pageSize = 50
    /// The last page the console shows (50 million rows): a page number from a URL is brought
    /// into 1…this, so no arithmetic on it can overflow.
    package static let lastPage = 1_000_000

    /// The page a `page` parameter asks for: 1 when missing or not a number, within 1…``lastPage``.
    package static func pageNumber(_ text: String?) -> Int {
        guard let text, text.utf8.count <= 20, let number = Int(text) else { return 1 }
        return min(max(1, number), lastPage)
    }

    package func notification(_ id: String, page: Int) async throws -> NotificationView? {
        guard let notification = try await notifications.notification(id: id, recipients: false),
              let recipients = try await store.recipients(notificationId: id, offset: (min(max(1, page), Self.lastPage) - 1) * Self.pageSize,
                                                          limit: Self.pageSize)
        else { return nil }
        return NotificationView(notification: notification, total: recipients.total, sentAt: recipients.sentAt, recipients: recipients.page)
    }

    package struct UserView: Sendable {
        var devices: [ConsoleStore.DeviceSummary]
        var pending: [ConsoleStore.PendingRegistration]
        var recent: [ConsoleStore.UserNotification]
        var removed: [ConsoleStore.RemovedDevice] = []
    }

    package func user(_ user: String) async throws -> UserView? {
        guard !user.isEmpty else { return nil }
        return UserView(devices: try await store.devices(user: user), pending: try await store.pendingRegistrations(user: user),
                        recent: try await store.recentNotifications(user: user), removed: try await store.removedDevices(user: user))
    }

    package struct OutboxView: Sendable {
        var page: Int
        var total: Int
        var waiting: [ConsoleStore.WaitingReport]
        var dead: [DeadReport]
    }

    package func outbox(page: Int) async throws -> OutboxView {
        let page = min(max(1, page), Self.lastPage)
        let waiting = try await store.waitingReports(offset: (page - 1) * Self.pageSize, limit: Self.pageSize)
        return OutboxView(page: page, total: waiting.total, waiting: waiting.page, dead: try await outbox.deadLetters(limit: 100))
    }
}
