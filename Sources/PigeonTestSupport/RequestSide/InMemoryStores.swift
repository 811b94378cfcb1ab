import Foundation
import PigeonBankService
import PigeonDomain
import PigeonDeviceAPI
import PigeonStore
import Synchronization

/// The request side's stores in memory, one consistent world: a device registered through the
/// device API makes the bank's sends to its user `QUEUED`, the bank's `deleteSubscription`
/// removes it, a phone acknowledges what was sent to its user. User ids compare case-folded
/// (the gateway's default rule); every call is atomic. For the unit tier: the endpoints and
/// the router run on it without PostgreSQL.
package final class InMemoryStores: DeviceRegistering, AcknowledgementRecording, RateLimitCounting,
    NotificationRecording, SubscriptionKeeping, Sendable {
    /// A subscribed device.
    package struct Device: Sendable, Equatable {
        package var id: Int64
        package var identity: DeviceIdentity
        package var pushToken: String
        package var tokenDigest: Data
        package var tokenExpiresAt: Date
        package var encryptionKey: DeviceEncryptionKey?
    }

    /// A registration waiting for its code.
    package struct Pending: Sendable, Equatable {
        package var registration: PendingRegistration
        package var digest: Data
    }

    private struct World {
        var devices: [Device] = []
        var pending: [Pending] = []
        var nextDeviceId: Int64 = 1
        var notifications: [String: PushNotification] = [:]
        /// Each notification's recipients' states, in the order sent.
        var states: [String: [RecipientState]] = [:]
        var buckets: [String: (started: Date, count: Int)] = [:]
    }

    private let world = Mutex(World())
    private let clock: @Sendable () -> Date

    /// `clock` decides token expiry and rate-limit windows.
    package init(clock: @escaping @Sendable () -> Date = Date.init) {
        self.clock = clock
    }

    // MARK: Inspection for tests

    package var devices: [Device] { world.withLock { $0.devices } }
    package var pendingRegistrations: [Pending] { world.withLock { $0.pending } }

    package func states(of notificationId: String) -> [RecipientState]? {
        world.withLock { $0.states[notificationId] }
    }

    /// Erases a confidential notification's content as the gateway does once it is over.
    package func eraseContent(notificationId: String) {
        world.withLock { world in
            guard var notification = world.notifications[notificationId] else { return }
            notification.contentErased = true
            notification.pushContent.text = ""
            notification.details = nil
            world.notifications[notificationId] = notification
        }
    }

    /// Removes a device as the console's revoke does; nil when it is already gone.
    package func remove(deviceId: Int64) -> Device? {
        world.withLock { world in
            guard let index = world.devices.firstIndex(where: { $0.id == deviceId }) else { return nil }
            return world.devices.remove(at: index)
        }
    }

    /// Every notification stored, by id.
    package var notifications: [String: PushNotification] { world.withLock { $0.notifications } }

    /// Moves a delivery as the engine would (`SENT`, `EXPIRED`, …).
    package func setState(_ state: DeliveryState, notificationId: String, user: String) {
        world.withLock { world in
            guard var states = world.states[notificationId] else { return }
            for index in states.indices where Self.same(states[index].user, user) { states[index].state = state }
            world.states[notificationId] = states
        }
    }

    private static func same(_ a: String, _ b: String) -> Bool { a.lowercased() == b.lowercased() }

    private static func sameDevice(_ a: DeviceIdentity, _ b: DeviceIdentity) -> Bool {
        same(a.userId, b.userId) && a.deviceId == b.deviceId && a.platform == b.platform && a.appId == b.appId
    }

    // MARK: DeviceRegistering

    package func authenticate(digest: Data) async throws -> AuthenticatedDevice? {
        let now = clock()
        return world.withLock { world in
            world.devices.first { $0.tokenDigest == digest && $0.tokenExpiresAt > now }
                .map { AuthenticatedDevice(id: $0.id, userId: $0.identity.userId, identity: $0.identity) }
        }
    }

    package func refresh(device id: Int64, pushToken: String, environment: PushEnvironment, token: StoredToken,
                         encryptionKey: EncryptionKeyUpdate) async throws {
        world.withLock { world in
            guard let index = world.devices.firstIndex(where: { $0.id == id }) else { return }
            world.devices[index].pushToken = pushToken
            world.devices[index].identity.environment = environment
            world.devices[index].tokenDigest = token.digest
            world.devices[index].tokenExpiresAt = token.expiresAt
            switch encryptionKey {
            case .keep: break
            case .remove: world.devices[index].encryptionKey = nil
            case .replace(let key): world.devices[index].encryptionKey = key
            }
        }
    }

    @discardableResult
    package func subscribe(_ identity: DeviceIdentity, pushToken: String, token: StoredToken, override: Bool,
                           encryptionKey: DeviceEncryptionKey?) async throws -> Int64 {
        world.withLock { world in
            world.devices.removeAll { Self.sameDevice($0.identity, identity) }
            world.pending.removeAll { Self.sameDevice($0.registration.identity, identity) }
            let id = world.nextDeviceId
            world.nextDeviceId += 1
            if override { world.devices.removeAll { Self.same($0.identity.userId, identity.userId) } }
            world.devices.append(Device(id: id, identity: identity, pushToken: pushToken, tokenDigest: token.digest,
                                        tokenExpiresAt: token.expiresAt, encryptionKey: encryptionKey))
            return id
        }
    }

    package func savePending(_ identity: DeviceIdentity, pushToken: String, registrationDigest: Data, keep: Int,
                             encryptionKey: DeviceEncryptionKey?) async throws {
        world.withLock { world in
            world.pending.append(Pending(registration: PendingRegistration(identity: identity, pushToken: pushToken, encryptionKey: encryptionKey),
                                         digest: registrationDigest))
            let mine = world.pending.indices.filter {
                Self.same(world.pending[$0].registration.identity.userId, identity.userId) && world.pending[$0].registration.identity.deviceId == identity.deviceId
            }
            for index in mine.dropLast(max(1, keep)).reversed() { world.pending.remove(at: index) }
        }
    }

    package func pending(registrationDigest: Data, bankClientId: String, userId: String, deviceId: String) async throws -> PendingRegistration? {
        world.withLock { world in
            world.pending.first {
                $0.digest == registrationDigest && $0.registration.identity.bankClientId == bankClientId
                    && Self.same($0.registration.identity.userId, userId) && $0.registration.identity.deviceId == deviceId
            }?.registration
        }
    }

    package func dropPending(bankClientId: String, userId: String, deviceId: String) async throws {
        world.withLock { world in
            world.pending.removeAll {
                $0.registration.identity.bankClientId == bankClientId && Self.same($0.registration.identity.userId, userId)
                    && $0.registration.identity.deviceId == deviceId
            }
        }
    }

    // MARK: RateLimitCounting

    package func take(bucket: String, limit: Int, window: Duration) async throws -> RateLimitStore.Decision {
        let now = clock()
        let seconds = Double(window.components.seconds)
        return world.withLock { world in
            var entry = world.buckets[bucket] ?? (now, 0)
            if now.timeIntervalSince(entry.started) >= seconds { entry = (now, 0) }
            entry.count += 1
            world.buckets[bucket] = entry
            let retryAfter = max(1, Int((seconds - now.timeIntervalSince(entry.started)).rounded(.up)))
            return RateLimitStore.Decision(count: entry.count, retryAfterSeconds: retryAfter, allowed: entry.count <= limit)
        }
    }

    // MARK: NotificationRecording, SubscriptionKeeping

    package func send(_ notification: PushNotification) async throws -> SendOutcome {
        world.withLock { world in
            if let states = world.states[notification.id] { return .duplicate(states) }
            var seen = Set<String>()
            let recipients = notification.recipients.filter { seen.insert($0.lowercased()).inserted }
            let states = recipients.map { user in
                RecipientState(user: user, state: world.devices.contains { Self.same($0.identity.userId, user) } ? .queued : .invalidSubscription)
            }
            // Stored as PostgreSQL stores it: one recipient per user, as first written.
            var stored = notification
            stored.recipients = recipients
            world.notifications[notification.id] = stored
            world.states[notification.id] = states
            return .stored(states, expiresAt: Date().addingTimeInterval(TimeInterval(notification.timeoutSeconds)))
        }
    }

    package func notification(id: String, recipients: Bool) async throws -> PushNotification? {
        world.withLock { world in
            guard var notification = world.notifications[id] else { return nil }
            if !recipients { notification.recipients = [] }
            return notification
        }
    }

    package func deliveryStatus(id: String) async throws -> [RecipientState]? {
        world.withLock { $0.states[id] }
    }

    package func deleteAll(user: String) async throws -> Int {
        world.withLock { world in
            let before = world.devices.count
            world.devices.removeAll { Self.same($0.identity.userId, user) }
            return before - world.devices.count
        }
    }

    package func exist(users: [String]) async throws -> [Bool] {
        world.withLock { world in users.map { user in world.devices.contains { Self.same($0.identity.userId, user) } } }
    }

    // MARK: AcknowledgementRecording

    package func acknowledge(notificationId: String, user: String, device: Int64, target: DeliveryState) async throws -> AcknowledgementResult {
        world.withLock { world in
            guard var states = world.states[notificationId] else { return .notFound }
            guard let index = states.firstIndex(where: { Self.same($0.user, user) }) else { return .notAddressed }
            if states[index].state.canAdvance(to: target) { states[index].state = target }
            world.states[notificationId] = states
            return .recorded(states[index].state)
        }
    }

    package func notification(id: String, user: String) async throws -> NotificationLookup {
        world.withLock { world in
            guard let notification = world.notifications[id] else { return .notFound }
            guard world.states[id]?.contains(where: { Self.same($0.user, user) }) == true else { return .notAddressed }
            return .found(notification)
        }
    }
}
