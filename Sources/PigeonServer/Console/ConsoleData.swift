import Foundation
import OutboundHTTP
import PigeonCore
import PigeonStore
import Synchronization

/// What the console's pages show, read from the stores, the metrics and the push clients.
struct ConsoleData: Sendable {
    let store: ConsoleStore
    let notifications: NotificationStore
    let outbox: Outbox
    /// The queue's and the outbox's gauges, sampled every 5 s by ``MetricsSampler``: the
    /// overview shows what `/metrics` shows, without querying them again.
    let metrics: MetricsRegistry
    let pool: PostgresPool
    let migrator: Migrator
    let activity: PushActivity
    /// The push services' clients, known once the transports are made (after the listeners).
    let pushClients: LateList<(service: String, app: String, client: HTTP2Client)>
    /// The HTTPS listeners, for their certificates' expiry.
    let listenerCertificates: LateList<ListenerCertificate>
    /// The effective configuration, secrets redacted.
    let settings: [(key: String, value: String)]

    struct Overview: Sendable {
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
    func overview() async throws -> Overview {
        var overview = Overview(
            database: "", databaseUp: false, queueDepth: metrics.gauge(Metric.deliveryQueueDepth),
            oldestDueSeconds: metrics.gauge(Metric.deliveryOldestDueSeconds), outboxDepth: metrics.gauge(Metric.outboxDepth),
            outboxOldestSeconds: metrics.gauge(Metric.outboxOldestAgeSeconds), deadReports: metrics.gauge(Metric.outboxDeadLetters),
            connections: PushClientCounts.summed(pushClients.elements).map { ($0.service, $0.app, $0.opened, $0.restarted) },
            certificates: listenerCertificates.elements.map { ($0.files.addressKey, $0.server.certificateExpiry) },
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

    struct NotificationView: Sendable {
        var notification: PushNotification
        var total: Int
        var sentAt: Date
        var recipients: [ConsoleStore.Recipient]
    }

    static let pageSize = 50
    /// The last page the console shows (50 million rows): a page number from a URL is brought
    /// into 1…this, so no arithmetic on it can overflow.
    static let lastPage = 1_000_000

    /// The page a `page` parameter asks for: 1 when missing or not a number, within 1…``lastPage``.
    static func pageNumber(_ text: String?) -> Int {
        guard let text, text.utf8.count <= 20, let number = Int(text) else { return 1 }
        return min(max(1, number), lastPage)
    }

    func notification(_ id: String, page: Int) async throws -> NotificationView? {
        guard let notification = try await notifications.notification(id: id, recipients: false),
              let recipients = try await store.recipients(notificationId: id, offset: (min(max(1, page), Self.lastPage) - 1) * Self.pageSize,
                                                          limit: Self.pageSize)
        else { return nil }
        return NotificationView(notification: notification, total: recipients.total, sentAt: recipients.sentAt, recipients: recipients.page)
    }

    struct UserView: Sendable {
        var devices: [ConsoleStore.DeviceSummary]
        var pending: [ConsoleStore.PendingRegistration]
        var recent: [ConsoleStore.UserNotification]
        var removed: [ConsoleStore.RemovedDevice] = []
    }

    func user(_ user: String) async throws -> UserView? {
        guard !user.isEmpty else { return nil }
        return UserView(devices: try await store.devices(user: user), pending: try await store.pendingRegistrations(user: user),
                        recent: try await store.recentNotifications(user: user), removed: try await store.removedDevices(user: user))
    }

    struct OutboxView: Sendable {
        var page: Int
        var total: Int
        var waiting: [ConsoleStore.WaitingReport]
        var dead: [DeadReport]
    }

    func outbox(page: Int) async throws -> OutboxView {
        let page = min(max(1, page), Self.lastPage)
        let waiting = try await store.waitingReports(offset: (page - 1) * Self.pageSize, limit: Self.pageSize)
        return OutboxView(page: page, total: waiting.total, waiting: waiting.page, dead: try await outbox.deadLetters(limit: 100))
    }
}

/// Parts of a gateway the console shows that are made after it (the push clients, the
/// listeners), set once they exist.
final class LateList<Element: Sendable>: Sendable {
    private let list = Mutex<[Element]>([])

    var elements: [Element] { list.withLock { $0 } }

    func set(_ elements: [Element]) {
        list.withLock { $0 = elements }
    }
}
