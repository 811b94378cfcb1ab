import Foundation
import PigeonBankService
import PigeonDelivery
import PigeonDeviceAPI
import PigeonDomain
import PigeonStore
import Synchronization

/// Live Activities in memory (CONTRACT §9) over the devices of an ``InMemoryStores``, as the
/// gateway keeps them in PostgreSQL: an activity reaches each subscribed device of its recipients
/// that can show it (an iPhone with a push-to-start token for the type, an Android device); a
/// recipient is `STARTING`, `RUNNING` or `ENDED` as the best of their devices is, `NO_TOKEN` with
/// none. Every event gets a timestamp later than the last one pushed, and each device has at most
/// one push waiting per activity — a newer event replaces one not yet pushed — in the queue the
/// activity engine claims under a lease. Held to `ActivityStore` by ActivityStoresContractTests
/// and ActivityQueueContractTests.
package final class InMemoryActivities: ActivityKeeping, ActivityTokenRecording, ActivityQueueing, Sendable {
    private enum DeviceState { case starting, running, ended }

    private struct Activity {
        var type: String
        var attributes: String
        var contentState: String
        var lastTimestamp: Int64
        var recipients: [String]
        var ended = false
        /// Events queued after the start.
        var events = 0
    }

    /// What an activity is on one device.
    private struct ActivityDevice {
        var user: String
        var state: DeviceState
        var updateToken: String?
        var lastSentTimestamp: Int64 = 0
    }

    /// The push waiting (or in flight) for one device of one activity, or a refresh.
    private struct Push {
        var kind: ActivityPushKind
        var timestamp: Int64
        var content: ActivityContent
        var attempts = 0
        var nextAttemptAt: Date
        var leaseOwner: String?
        var lastError: String?
    }

    private struct Key: Hashable {
        var activityId: String
        var deviceRowId: Int64
    }

    private struct World {
        var activities: [String: Activity] = [:]
        var startTokens: [Int64: [String: String]] = [:]
        var devices: [Key: ActivityDevice] = [:]
        var pushes: [Key: Push] = [:]
    }

    private let world = Mutex(World())
    private let devices: InMemoryStores
    private let clock: @Sendable () -> Date

    package init(devices: InMemoryStores, clock: @escaping @Sendable () -> Date = Date.init) {
        self.devices = devices
        self.clock = clock
    }

    /// Activities stored (started), for tests.
    package var activityIds: [String] { world.withLock { $0.activities.keys.sorted() } }
    /// Events queued after the start, per activity.
    package func events(_ activityId: String) -> Int { world.withLock { $0.activities[activityId]?.events ?? 0 } }

    private func userDevices(_ user: String) -> [InMemoryStores.Device] {
        devices.devices.filter { $0.identity.userId.lowercased() == user.lowercased() }
    }

    private static func seconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

    // MARK: The bank

    package func start(_ start: ActivityStart, now: Date) async throws -> ActivityStartOutcome {
        let owned = start.recipients.flatMap { user in userDevices(user).map { (user: user, device: $0) } }
        let moment = clock()
        return world.withLock { world in
            guard world.activities[start.activityId] == nil else { return .duplicate }
            let timestamp = Self.seconds(now)
            world.activities[start.activityId] = Activity(type: start.activityType, attributes: start.attributes,
                                                          contentState: start.content.contentState ?? "{}", lastTimestamp: timestamp,
                                                          recipients: start.recipients)
            for (user, device) in owned {
                let reachable = device.identity.platform != .ios || world.startTokens[device.id]?[start.activityType] != nil
                let key = Key(activityId: start.activityId, deviceRowId: device.id)
                guard reachable, device.identity.platform != .web else { continue }
                // A device of two recipients (one user named twice) belongs to the first in order.
                if let known = world.devices[key], known.user <= user { continue }
                world.devices[key] = ActivityDevice(user: user, state: .starting)
            }
            Self.queue(&world, activityId: start.activityId, kind: .start, timestamp: timestamp, content: start.content, now: moment)
            return .started(Self.states(world, activityId: start.activityId))
        }
    }

    package func event(activityId: String, kind: ActivityPushKind, content: ActivityContent, now: Date) async throws -> ActivityEventOutcome {
        let moment = clock()
        return world.withLock { world in
            guard var activity = world.activities[activityId] else { return .notFound }
            guard !activity.ended else { return .ended }
            let keys = world.devices.keys.filter { $0.activityId == activityId }
            // Later than every event a device was sent or is being sent; real time where it can be.
            let pushedLast = keys.contains { (world.devices[$0]?.lastSentTimestamp ?? 0) >= activity.lastTimestamp }
                || keys.contains { world.pushes[$0].map { $0.timestamp == activity.lastTimestamp && $0.leaseOwner != nil } ?? false }
            activity.lastTimestamp = pushedLast ? max(activity.lastTimestamp + 1, Self.seconds(now)) : max(activity.lastTimestamp, Self.seconds(now))
            activity.ended = kind == .end
            activity.contentState = content.contentState ?? activity.contentState
            activity.events += 1
            world.activities[activityId] = activity
            var content = content
            content.contentState = activity.contentState
            if kind == .end {
                // A start not yet pushed never needs an end: that device is done.
                for key in keys where world.pushes[key]?.kind == .start && world.pushes[key]?.leaseOwner == nil {
                    world.pushes[key] = nil
                    world.devices[key]?.state = .ended
                }
            }
            let queued = Self.queue(&world, activityId: activityId, kind: kind, timestamp: activity.lastTimestamp, content: content, now: moment)
            return .queued(devices: queued)
        }
    }

    package func status(activityId: String) async throws -> [(user: String, state: ActivityRecipientState)]? {
        world.withLock { world in
            world.activities[activityId] == nil ? nil : Self.states(world, activityId: activityId)
        }
    }

    package func refreshWidgets(users: [String]) async throws -> [(user: String, devices: Int)] {
        refresh(users: users, kind: .widgets, activityId: "", platforms: [.ios, .android, .rustore, .huawei])
    }

    package func refreshControls(users: [String]) async throws -> [(user: String, devices: Int)] {
        refresh(users: users, kind: .controls, activityId: "#controls", platforms: [.ios])
    }

    /// A refresh push per subscribed device of `users` on `platforms`; one already waiting is
    /// made due again rather than queued twice.
    private func refresh(users: [String], kind: ActivityPushKind, activityId: String, platforms: Set<Platform>) -> [(user: String, devices: Int)] {
        let now = clock()
        let targets = users.map { user in (user, userDevices(user).filter { platforms.contains($0.identity.platform) }) }
        return world.withLock { world in
            for device in targets.flatMap(\.1) {
                let key = Key(activityId: activityId, deviceRowId: device.id)
                if var push = world.pushes[key] {
                    push.attempts = 0
                    push.lastError = nil
                    if push.leaseOwner == nil { push.nextAttemptAt = now }
                    world.pushes[key] = push
                } else {
                    world.pushes[key] = Push(kind: kind, timestamp: 0, content: ActivityContent(), nextAttemptAt: now)
                }
            }
            return targets.map { ($0.0, $0.1.count) }
        }
    }

    // MARK: Phones

    package func saveStartToken(deviceRowId: Int64, activityType: String, token: String) async throws -> Bool {
        world.withLock { world in
            var tokens = world.startTokens[deviceRowId] ?? [:]
            guard tokens[activityType] != nil || tokens.count < ActivityStore.maximumStartTokensPerDevice else { return false }
            tokens[activityType] = token
            world.startTokens[deviceRowId] = tokens
            return true
        }
    }

    package func saveUpdateToken(activityId: String, deviceRowId: Int64, token: String) async throws -> ActivityTokenOutcome {
        let now = clock()
        return world.withLock { world in
            let key = Key(activityId: activityId, deviceRowId: deviceRowId)
            guard let device = world.devices[key] else { return .notFound }
            guard device.state != .ended else { return .ended }
            world.devices[key]?.updateToken = token
            world.devices[key]?.state = .running
            // What waited for the token is due now.
            if world.pushes[key]?.leaseOwner == nil { world.pushes[key]?.nextAttemptAt = now }
            return .saved
        }
    }

    package func endedOnDevice(activityId: String, deviceRowId: Int64) async throws -> Bool {
        world.withLock { world in
            let key = Key(activityId: activityId, deviceRowId: deviceRowId)
            world.pushes[key] = nil
            guard world.devices[key] != nil else { return false }
            world.devices[key]?.state = .ended
            world.devices[key]?.updateToken = nil
            return true
        }
    }

    // MARK: The engine's queue

    package func claim(owner: String, limit: Int, lease: Duration) async throws -> [ClaimedActivityPush] {
        let now = clock()
        let known = Dictionary(devices.devices.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return world.withLock { world in
            let due = world.pushes.filter { key, push in
                guard push.nextAttemptAt <= now, let device = known[key.deviceRowId] else { return false }
                return [.start, .widgets, .controls].contains(push.kind) || device.identity.platform != .ios
                    || world.devices[key]?.updateToken != nil
            }
            .sorted { ($0.value.nextAttemptAt, $0.key.activityId, $0.key.deviceRowId) < ($1.value.nextAttemptAt, $1.key.activityId, $1.key.deviceRowId) }
            .prefix(max(1, min(limit, 10_000)))
            return due.compactMap { key, push -> ClaimedActivityPush? in
                guard let device = known[key.deviceRowId] else { return nil }
                var claimed = push
                claimed.leaseOwner = owner
                claimed.attempts += 1
                claimed.nextAttemptAt = now.addingTimeInterval(lease.inSeconds)
                world.pushes[key] = claimed
                let activity = world.activities[key.activityId]
                let activityDevice = world.devices[key]
                let token: String
                if device.identity.platform != .ios || push.kind.isRefresh {
                    token = device.pushToken
                } else if push.kind == .start {
                    token = activity.flatMap { world.startTokens[key.deviceRowId]?[$0.type] } ?? ""
                } else {
                    token = activityDevice?.updateToken ?? ""
                }
                return ClaimedActivityPush(
                    activityId: key.activityId, activityType: activity?.type ?? "", kind: push.kind, timestamp: push.timestamp,
                    content: push.content, attributes: activity?.attributes,
                    device: Device(id: device.id, bankClientId: device.identity.bankClientId, userId: device.identity.userId,
                                   deviceId: device.identity.deviceId, platform: device.identity.platform, pushToken: device.pushToken,
                                   appId: device.identity.appId, environment: device.identity.environment),
                    token: token, lastSentTimestamp: activityDevice?.lastSentTimestamp ?? 0, attempts: claimed.attempts)
            }
        }
    }

    package func record(_ results: [ActivityPushResult], owner: String) async throws {
        let now = clock()
        world.withLock { world in
            for result in results { Self.record(result, owner: owner, now: now, &world) }
        }
    }

    package func release(owner: String) async throws -> Int {
        let now = clock()
        return world.withLock { world in
            var released = 0
            for (key, push) in world.pushes where push.leaseOwner == owner {
                world.pushes[key]?.leaseOwner = nil
                world.pushes[key]?.nextAttemptAt = now
                released += 1
            }
            return released
        }
    }

    // MARK: Rules

    /// Queues `kind` for every device of the activity that has not ended it, replacing a push not
    /// yet sent (a start in flight stays a start with the newer content); returns how many.
    @discardableResult
    private static func queue(_ world: inout World, activityId: String, kind: ActivityPushKind, timestamp: Int64, content: ActivityContent,
                              now: Date) -> Int {
        let keys = world.devices.filter { $0.key.activityId == activityId && $0.value.state != .ended }.keys
        for key in keys {
            if var push = world.pushes[key] {
                push.kind = push.kind == .start && kind == .update ? .start : kind
                push.timestamp = timestamp
                push.content = content
                push.attempts = 0
                push.lastError = nil
                if push.leaseOwner == nil { push.nextAttemptAt = now }
                world.pushes[key] = push
            } else {
                world.pushes[key] = Push(kind: kind, timestamp: timestamp, content: content, nextAttemptAt: now)
            }
        }
        return keys.count
    }

    /// Each recipient's state, in the order sent: the best of their devices'.
    private static func states(_ world: World, activityId: String) -> [(user: String, state: ActivityRecipientState)] {
        let recipients = world.activities[activityId]?.recipients ?? []
        let reached = world.devices.filter { $0.key.activityId == activityId }.values
        return recipients.map { user in
            let states = reached.filter { $0.user == user }.map(\.state)
            let state: ActivityRecipientState = states.isEmpty ? .noToken
                : states.contains(.running) ? .running : states.contains(.starting) ? .starting : .ended
            return (user, state)
        }
    }

    private static func record(_ result: ActivityPushResult, owner: String, now: Date, _ world: inout World) {
        let claim = result.claim
        let key = Key(activityId: claim.activityId, deviceRowId: claim.device.id)
        func held() -> Bool { world.pushes[key]?.leaseOwner == owner }
        // The row is this claim's while it holds the lease and no newer event replaced it.
        func finish() {
            if held() && world.pushes[key]?.timestamp == claim.timestamp {
                world.pushes[key] = nil
            } else {
                handBack(error: nil)
            }
        }
        func handBack(error: String?, at: Date? = nil) {
            guard held(), var push = world.pushes[key] else { return }
            push.leaseOwner = nil
            push.lastError = error.map { String($0.prefix(500)) } ?? push.lastError
            push.nextAttemptAt = push.timestamp == claim.timestamp ? at ?? now : now
            world.pushes[key] = push
        }
        switch result.change {
        case .sent:
            if claim.kind == .start, held(), world.pushes[key]?.timestamp != claim.timestamp, world.pushes[key]?.kind == .start {
                // A newer event replaced this start while it was in flight: what waits is an update.
                world.pushes[key]?.kind = .update
            }
            finish()
            guard !claim.kind.isRefresh, var device = world.devices[key] else { return }
            device.lastSentTimestamp = max(device.lastSentTimestamp, claim.timestamp)
            let startingUntilToken = claim.kind == .start && claim.device.platform == .ios
            device.state = device.state == .ended || claim.kind == .end ? .ended
                : startingUntilToken && device.updateToken == nil ? .starting : .running
            world.devices[key] = device
        case .dropped, .failed:
            finish()
        case .retry(let at, let error):
            handBack(error: error, at: at)
        case .tokenDead(let reason):
            switch (claim.kind, claim.device.platform) {
            case (.start, .ios):
                // Only that push-to-start token: the device cannot start this type until the phone sends a new one.
                world.startTokens[claim.device.id] = world.startTokens[claim.device.id]?.filter { $0.value != claim.token }
                finish()
                if world.devices[key]?.updateToken == nil { world.devices[key] = nil }
            case (.update, .ios), (.end, .ios):
                // Only that update token: the push waits for the phone's next one.
                if world.devices[key]?.updateToken == claim.token { world.devices[key]?.updateToken = nil }
                handBack(error: reason)
            default:
                finish()
            }
        }
    }
}
