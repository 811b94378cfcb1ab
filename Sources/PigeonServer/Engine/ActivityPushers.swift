import Foundation
import PigeonDomain
import PigeonDelivery
import PushCore
import PushTransport
import Synchronization

/// The push services for Live Activity events and widget refreshes (CONTRACT §9): APNs on each
/// app's urgent-lane connection with the `.push-type.liveactivity` / `.push-type.widgets`
/// topic, and the Android services' urgent senders for the data messages.
struct ActivityPushers: ActivityPushing {
    /// Pushes in flight per route and event at once.
    static let maxInFlight = 200
    /// How long a route this gateway does not serve waits before the push is tried again
    /// (another gateway of the fleet may serve it).
    static let unservedDelay: Duration = .seconds(60)

    let apns: [PushRoute: (transport: APNsTransport, topic: String)]
    let senders: [PushRoute: any PushSending]

    func pushAPNs(_ prepared: (String) throws(PushMessageError) -> APNsPreparedMessage, route: PushRoute, tokens: [String]) async -> [PushOutcome] {
        guard let (transport, topic) = apns[route] else { return unserved(route, count: tokens.count) }
        let message: APNsPreparedMessage
        do {
            message = try prepared(topic)
        } catch {
            return tokens.map { _ in .failed(reason: error.description) }
        }
        return await transport.send(message, to: tokens, maxInFlight: Self.maxInFlight)
    }

    func pushData(_ message: PushMessage, route: PushRoute, tokens: [String]) async -> [PushOutcome] {
        guard let sender = senders[route] else { return unserved(route, count: tokens.count) }
        let outcomes = Mutex([PushOutcome](repeating: .retry(reason: "not sent", after: nil), count: tokens.count))
        let batch = PushBatch(messages: [message], pushes: tokens.map { PushBatch.Push(message: 0, token: $0) })
        await sender.send(batch, maxInFlight: Self.maxInFlight) { result in
            outcomes.withLock { $0[result.index] = result.outcome }
        }
        return outcomes.withLock { $0 }
    }

    private func unserved(_ route: PushRoute, count: Int) -> [PushOutcome] {
        let reason = "no gateway here serves \(route) (its push service or apnsTopic is not configured)"
        return Array(repeating: .retry(reason: reason, after: Self.unservedDelay, cause: .unavailable), count: count)
    }
}
