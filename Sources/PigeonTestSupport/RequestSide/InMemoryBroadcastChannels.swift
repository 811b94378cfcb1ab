import Foundation
import PigeonBankService
import PushCore
import Synchronization

/// Broadcast channels in memory, as Apple's channel management API keeps them: created per app
/// and activity type, broadcast to, deleted; a channel Apple dropped (``drop(channelId:)``)
/// answers not found, and an app in ``refusedApps`` is refused as a bundle without the
/// capability is. The gateway's implementation is tested against the simulator end to end.
package final class InMemoryBroadcastChannels: BroadcastChannels {
    /// A channel and what was broadcast to it, in order.
    package struct Channel: Sendable {
        package var appId: String
        package var activityType: String
        package var storagePolicy: Int
        package var broadcasts: [LiveActivityEvent] = []
    }

    private struct State {
        var channels: [String: Channel] = [:]
        var refusedApps: Set<String> = []
        var created = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// The channels that exist, by id.
    package var channels: [String: Channel] { state.withLock { $0.channels } }

    /// Apple drops a channel on its side.
    package func drop(channelId: String) { state.withLock { _ = $0.channels.removeValue(forKey: channelId) } }

    /// Apps whose channel calls Apple refuses.
    package func refuse(appId: String) { state.withLock { _ = $0.refusedApps.insert(appId) } }

    package func create(appId: String, activityType: String, storagePolicy: Int) async throws -> Result<String, BroadcastChannelFailure> {
        state.withLock { state in
            guard !state.refusedApps.contains(appId) else { return .failure(.refused("app \(appId) has no broadcast capability")) }
            state.created += 1
            let id = Data("channel-\(state.created)".utf8).base64EncodedString()
            state.channels[id] = Channel(appId: appId, activityType: activityType, storagePolicy: storagePolicy)
            return .success(id)
        }
    }

    package func delete(channelId: String) async throws -> Result<Void, BroadcastChannelFailure> {
        state.withLock { state in
            state.channels.removeValue(forKey: channelId) == nil ? .failure(.notFound("no channel \(channelId)")) : .success(())
        }
    }

    package func broadcast(channelId: String, event: LiveActivityEvent, now: Date) async throws -> Result<Void, BroadcastChannelFailure> {
        state.withLock { state in
            guard state.channels[channelId] != nil else { return .failure(.notFound("channel \(channelId) is not registered")) }
            state.channels[channelId]?.broadcasts.append(event)
            return .success(())
        }
    }
}
