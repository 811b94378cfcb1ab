import Foundation
import PigeonBankService
import PigeonDomain
import PigeonDeviceAPI
import PigeonStore
import Synchronization

/// Live Activities in memory (CONTRACT §9) over the devices of an ``InMemoryStores``: a
/// recipient is `STARTING` when one of their iPhones has a push-to-start token for the type or
/// they have an Android device, `NO_TOKEN` otherwise, `RUNNING` once a phone sent its update
/// token, `ENDED` after the end. No pushes: the unit tier checks what the endpoints store and answer.
package final class InMemoryActivities: ActivityKeeping, ActivityTokenRecording, Sendable {
    private struct Activity {
        var type: String
        var recipients: [(user: String, state: ActivityRecipientState)]
        var events = 0
        var ended = false
    }

    private struct World {
        var activities: [String: Activity] = [:]
        var startTokens: [Int64: [String: String]] = [:]
        var updateTokens: [String: [Int64: String]] = [:]
    }

    private let world = Mutex(World())
    private let devices: InMemoryStores

    package init(devices: InMemoryStores) {
        self.devices = devices
    }

    /// Activities stored (started), for tests.
    package var activityIds: [String] { world.withLock { $0.activities.keys.sorted() } }
    /// Events queued after the start, per activity.
    package func events(_ activityId: String) -> Int { world.withLock { $0.activities[activityId]?.events ?? 0 } }

    private func userDevices(_ user: String) -> [InMemoryStores.Device] {
        devices.devices.filter { $0.identity.userId.lowercased() == user.lowercased() }
    }

    package func start(_ start: ActivityStart, now: Date) async throws -> ActivityStore.StartOutcome {
        let owned = Dictionary(grouping: start.recipients.flatMap { user in userDevices(user).map { (user, $0) } }, by: \.0)
        return world.withLock { world in
            guard world.activities[start.activityId] == nil else { return .duplicate }
            let states = start.recipients.map { user -> (user: String, state: ActivityRecipientState) in
                let reachable = (owned[user] ?? []).contains { _, device in
                    device.identity.platform != .ios || world.startTokens[device.id]?[start.activityType] != nil
                }
                return (user, reachable ? .starting : .noToken)
            }
            world.activities[start.activityId] = Activity(type: start.activityType, recipients: states)
            return .started(states)
        }
    }

    package func event(activityId: String, kind: ActivityPushKind, content: ActivityContent, now: Date) async throws -> ActivityStore.EventOutcome {
        world.withLock { world in
            guard var activity = world.activities[activityId] else { return .notFound }
            guard !activity.ended else { return .ended }
            activity.events += 1
            let reached = activity.recipients.filter { $0.state == .starting || $0.state == .running }.count
            if kind == .end {
                activity.ended = true
                for index in activity.recipients.indices { activity.recipients[index].state = .ended }
            }
            world.activities[activityId] = activity
            return .queued(devices: reached)
        }
    }

    package func status(activityId: String) async throws -> [(user: String, state: ActivityRecipientState)]? {
        world.withLock { $0.activities[activityId]?.recipients }
    }

    package func refreshWidgets(users: [String]) async throws -> [(user: String, devices: Int)] {
        users.map { user in (user, userDevices(user).count) }
    }

    package func refreshControls(users: [String]) async throws -> [(user: String, devices: Int)] {
        users.map { user in (user, userDevices(user).filter { $0.identity.platform == .ios }.count) }
    }

    package func saveStartToken(deviceRowId: Int64, activityType: String, token: String) async throws -> Bool {
        world.withLock { world in
            var tokens = world.startTokens[deviceRowId] ?? [:]
            guard tokens[activityType] != nil || tokens.count < ActivityStore.maximumStartTokensPerDevice else { return false }
            tokens[activityType] = token
            world.startTokens[deviceRowId] = tokens
            return true
        }
    }

    package func saveUpdateToken(activityId: String, deviceRowId: Int64, token: String) async throws -> ActivityStore.TokenOutcome {
        guard let user = devices.devices.first(where: { $0.id == deviceRowId })?.identity.userId else { return .notFound }
        return world.withLock { world in
            guard var activity = world.activities[activityId],
                  let index = activity.recipients.firstIndex(where: { $0.user.lowercased() == user.lowercased() }) else { return .notFound }
            guard !activity.ended else { return .ended }
            activity.recipients[index].state = .running
            world.activities[activityId] = activity
            world.updateTokens[activityId, default: [:]][deviceRowId] = token
            return .saved
        }
    }

    package func endedOnDevice(activityId: String, deviceRowId: Int64) async throws -> Bool {
        guard let user = devices.devices.first(where: { $0.id == deviceRowId })?.identity.userId else { return false }
        return world.withLock { world in
            guard var activity = world.activities[activityId],
                  let index = activity.recipients.firstIndex(where: { $0.user.lowercased() == user.lowercased() }) else { return false }
            activity.recipients[index].state = .ended
            world.activities[activityId] = activity
            return true
        }
    }
}
