import Foundation
import PigeonCore
import PigeonConsole
import PigeonDomain
import PigeonStore
import Synchronization

/// The console's source over the harness's ``InMemoryStores``: the devices the device API
/// registered, the notifications the bank sent and their recipients' states; a revoke removes
/// the device from the stores (its bearer token stops working), dead reports are a list the test
/// fills. Held to the gateway's console on PostgreSQL by ConsoleSourceContractTests. `failing` makes every read throw, as a database that does not answer.
package final class InMemoryConsole: ConsoleSource {
    package struct Unavailable: Error {}

    private struct State {
        var dead: [DeadReport] = []
        package var waiting: [ConsoleStore.WaitingReport] = []
        var removed: [String: [ConsoleStore.RemovedDevice]] = [:]
        var failing = false
    }

    private let stores: InMemoryStores
    private let clock: @Sendable () -> Date
    private let state = Mutex(State())
    package let settings: [(key: String, value: String)]

    package init(stores: InMemoryStores, settings: [(key: String, value: String)], clock: @escaping @Sendable () -> Date) {
        self.stores = stores
        self.settings = settings
        self.clock = clock
    }

    /// Every read and change throws from now on (or answers again).
    package func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }

    package func addDead(_ report: DeadReport) { state.withLock { $0.dead.append(report) } }

    package var waiting: [ConsoleStore.WaitingReport] { state.withLock { $0.waiting } }

    private func available() throws {
        if state.withLock({ $0.failing }) { throw Unavailable() }
    }

    package func overview() async throws -> ConsoleOverview {
        try available()
        let dead = state.withLock { $0.dead.count }
        return ConsoleOverview(database: "reachable; schema current (in memory)", databaseUp: true, queueDepth: 0,
                               outboxDepth: Double(waiting.count), deadReports: Double(dead))
    }

    package func notification(_ id: String, page: Int) async throws -> ConsoleNotificationView? {
        try available()
        guard let notification = try await stores.notification(id: id, recipients: false),
              let states = try await stores.deliveryStatus(id: id) else { return nil }
        let now = clock()
        let recipients = states.dropFirst(ConsolePaging.offset(of: page)).prefix(ConsolePaging.pageSize).map {
            ConsoleStore.Recipient(user: $0.user, state: $0.state.rawValue, attempts: 0, lastError: nil, updatedAt: now)
        }
        return ConsoleNotificationView(notification: notification, total: states.count, sentAt: now, recipients: Array(recipients))
    }

    package func user(_ user: String) async throws -> ConsoleUserView? {
        try available()
        guard !user.isEmpty else { return nil }
        let devices = stores.devices.filter { $0.identity.userId.lowercased() == user.lowercased() }.map(Self.summary)
        let recent = stores.notifications.keys.sorted().compactMap { id -> ConsoleStore.UserNotification? in
            guard let delivery = stores.states(of: id)?.first(where: { $0.user.lowercased() == user.lowercased() }) else { return nil }
            return ConsoleStore.UserNotification(notificationId: id, state: delivery.state.rawValue, attempts: 0, sentAt: clock(), updatedAt: clock())
        }
        let pending = stores.pendingRegistrations.map(\.registration.identity).filter { $0.userId.lowercased() == user.lowercased() }.map {
            ConsoleRows.PendingRegistration(bankClientId: $0.bankClientId, deviceId: $0.deviceId, platform: $0.platform.rawValue, createdAt: clock())
        }
        return ConsoleUserView(devices: devices, pending: pending, recent: recent, removed: state.withLock { $0.removed[user.lowercased()] ?? [] })
    }

    package func outbox(page: Int) async throws -> ConsoleOutboxView {
        try available()
        return state.withLock { state in
            ConsoleOutboxView(page: ConsolePaging.clamped(page), total: state.waiting.count,
                              waiting: Array(state.waiting.dropFirst(ConsolePaging.offset(of: page)).prefix(ConsolePaging.pageSize)),
                              dead: state.dead)
        }
    }

    package func revoke(deviceId: Int64, reason: String) async throws -> (user: String, device: ConsoleStore.DeviceSummary)? {
        try available()
        guard let device = stores.remove(deviceId: deviceId) else { return nil }
        let summary = Self.summary(device)
        let removed = ConsoleStore.RemovedDevice(deviceId: summary.deviceId, platform: summary.platform, appId: summary.appId,
                                                 maskedToken: Redaction.token(summary.pushToken), reason: reason, removedAt: clock())
        state.withLock { $0.removed[device.identity.userId.lowercased(), default: []].append(removed) }
        return (device.identity.userId, summary)
    }

    /// Every device of the user answers SENT (the push senders are the engine's, tested with the simulator).
    package func testPush(user: String) async throws -> [ConsoleTestPush] {
        try available()
        return stores.devices.filter { $0.identity.userId.lowercased() == user.lowercased() }.map { ConsoleTestPush(deviceId: $0.identity.deviceId, state: "SENT") }
    }

    package func requeue(report: Int64) async throws -> Bool {
        try available()
        return state.withLock { state in
            guard let index = state.dead.firstIndex(where: { $0.id == report }) else { return false }
            let dead = state.dead.remove(at: index)
            state.waiting.append(ConsoleStore.WaitingReport(
                id: dead.id, kind: dead.kind, subject: dead.notificationId, concerned: dead.users, attempts: 0,
                nextAttemptAt: clock(), lastError: nil, createdAt: dead.createdAt))
            return true
        }
    }

    private static func summary(_ device: InMemoryStores.Device) -> ConsoleStore.DeviceSummary {
        ConsoleStore.DeviceSummary(
            id: device.id, bankClientId: device.identity.bankClientId, deviceId: device.identity.deviceId,
            platform: device.identity.platform.rawValue, appId: device.identity.appId, environment: device.identity.environment.rawValue,
            pushToken: device.pushToken, registeredAt: Date(timeIntervalSince1970: 0), reachedAt: nil,
            encryptionKeyId: device.encryptionKey?.keyId)
    }
}
