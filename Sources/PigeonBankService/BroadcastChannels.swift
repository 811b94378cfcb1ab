import Foundation
import PigeonDomain
import PigeonCore
import PushCore

/// Live Activity broadcast channels as the bank's SOAP service uses them (CONTRACT §9): the
/// gateway's implementation talks to Apple's channel management API and APNs; tests use fakes.
package protocol BroadcastChannels: Sendable {
    /// Creates a channel for `activityType` in the app: its channel id, or why not.
    func create(appId: String, activityType: String, storagePolicy: Int) async throws -> Result<String, BroadcastChannelFailure>
    /// Deletes a channel.
    func delete(channelId: String) async throws -> Result<Void, BroadcastChannelFailure>
    /// Sends `event` to every phone listening on the channel.
    func broadcast(channelId: String, event: LiveActivityEvent, now: Date) async throws -> Result<Void, BroadcastChannelFailure>
}

/// Why a channel call did not succeed.
package enum BroadcastChannelFailure: Error, Equatable {
    /// The channel is unknown here or Apple no longer has it.
    case notFound(String)
    /// Apple refused (a bundle without the capability, a bad request) or could not be reached.
    case refused(String)
}
