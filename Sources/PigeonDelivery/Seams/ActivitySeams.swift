import Foundation
import PigeonDomain
import PushCore

/// The queue of Live Activity and widget pushes as the activity engine uses it. PostgreSQL's
/// `ActivityStore` in the gateway; an in-memory queue in tests.
package protocol ActivityQueueing: Sendable {
    /// Up to `limit` pushes that can go now, leased to `owner` for `lease`.
    func claim(owner: String, limit: Int, lease: Duration) async throws -> [ClaimedActivityPush]
    /// Writes what became of claims `owner` still holds.
    func record(_ results: [ActivityPushResult], owner: String) async throws
    /// Hands back every claim `owner` holds, due at once; returns how many.
    @discardableResult
    func release(owner: String) async throws -> Int
}

/// The push services for activity and widget pushes (CONTRACT §9). Never throws: every failure
/// is an outcome.
package protocol ActivityPushing: Sendable {
    /// An APNs request of its own push type and topic (a Live Activity event, a widget refresh)
    /// to each token of a route; one outcome per token, in order.
    func pushAPNs(_ prepared: (String) throws(PushMessageError) -> APNsPreparedMessage, route: PushRoute, tokens: [String]) async -> [PushOutcome]
    /// A data message to each token of an Android route (FCM, RuStore, Huawei); one outcome per
    /// token, in order.
    func pushData(_ message: PushMessage, route: PushRoute, tokens: [String]) async -> [PushOutcome]
}
