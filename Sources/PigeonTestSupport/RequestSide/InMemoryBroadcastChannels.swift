import Foundation
import PigeonBankService
import PushCore
import Synchronization

/// Broadcast channels in memory, as the gateway keeps them with Apple's channel management API:
/// created per app and activity type, broadcast to (each broadcast stamped later than the
/// channel's last), deleted; a channel Apple dropped (``drop(channelId:)``) answers a broadcast
/// not found and is forgotten, and deleting it is done; an app in ``refuse(appId:)`` is refused
/// as a bundle without the capability is. Held to the gateway's implementation against the
/// simulator by BroadcastChannelsContractTests.
package final class InMemoryBroadcastChannels: BroadcastChannels {
    /// A channel and what was broadcast to it, in order.
    package struct Channel: Sendable {
        package var appId: String
        package var activityType: String
        package var storagePolicy: Int
        package var broadcasts: [LiveActivityEvent] = []
        /// Apple no longer has it; the gateway finds out at its next call.
        package var droppedByApple = false
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
    package func drop(channelId: String) { state.withLock { $0.channels[channelId]?.droppedByApple = true } }

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
            // One Apple dropped already is gone there too: deleting it is done.
            state.channels.removeValue(forKey: channelId) == nil ? .failure(.notFound("no channel \(channelId)")) : .success(())
        }
    }

    package func broadcast(channelId: String, event: LiveActivityEvent, now: Date) async throws -> Result<Void, BroadcastChannelFailure> {
        state.withLock { state in
            guard let channel = state.channels[channelId] else { return .failure(.notFound("channel \(channelId) is not registered")) }
            guard !channel.droppedByApple else {
                state.channels[channelId] = nil
                return .failure(.notFound("Apple no longer has channel \(channelId)"))
            }
            var stamped = event
            stamped.timestamp = max((channel.broadcasts.last?.timestamp ?? 0) + 1, Int64(now.timeIntervalSince1970.rounded(.down)))
            state.channels[channelId]?.broadcasts.append(stamped)
            return .success(())
        }
    }
}
