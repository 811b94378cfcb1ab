import Foundation
import PigeonDomain
import PushCore

/// The durable queue of deliveries: leased claims, outcomes written by the lease holder.
/// PostgreSQL's `DeliveryQueue` in the gateway; an in-memory queue in tests.
package protocol DeliveryQueueing: Sendable {
    /// Up to `limit` due deliveries whose priority is in `band` and whose time has not run out,
    /// leased to `owner` for `lease`, highest priority first.
    func claim(owner: String, limit: Int, lease: Duration, band: PriorityBand) async throws -> [ClaimedDelivery]
    /// Writes outcomes of deliveries `owner` still holds; returns how many rows changed.
    @discardableResult
    func record(_ results: [DeliveryResult], owner: String) async throws -> Int
    /// Hands back every delivery `owner` holds, due at once; returns how many.
    @discardableResult
    func release(owner: String) async throws -> Int
    /// Hands back `deliveries` `owner` holds without counting their claim as an attempt (they
    /// were not pushed), due again after `delay`, noting `error` as their last error when given
    /// (why they were not pushed); returns how many.
    @discardableResult
    func handBack(_ deliveries: [ClaimedDelivery], owner: String, delay: Duration, error: String?) async throws -> Int
}

extension DeliveryQueueing {
    /// ``handBack(_:owner:delay:error:)`` keeping each delivery's last error.
    @discardableResult
    package func handBack(_ deliveries: [ClaimedDelivery], owner: String, delay: Duration) async throws -> Int {
        try await handBack(deliveries, owner: owner, delay: delay, error: nil)
    }
}

/// Where the engine reads a notification's content by its storage key.
package protocol NotificationSource: Sendable {
    /// The notification stored under `key` (content only), or `nil` when it is gone.
    func notification(key: Int64) async throws -> PushNotification?
    /// The notifications stored under `keys`, in one look-up; keys that are gone are missing.
    func notifications(keys: [Int64]) async throws -> [Int64: PushNotification]
}

extension NotificationSource {
    /// One look-up per key: for sources without a batch look-up of their own (test fakes).
    package func notifications(keys: [Int64]) async throws -> [Int64: PushNotification] {
        var found: [Int64: PushNotification] = [:]
        for key in keys {
            if let notification = try await notification(key: key) { found[key] = notification }
        }
        return found
    }
}

/// Users' devices as the engine needs them.
package protocol DeviceDirectory: Sendable {
    /// The subscribed devices of `users`, keyed by ``key(for:)`` of each user.
    func devices(users: [String]) async throws -> [String: [Device]]
    /// The comparable form of a user id (case folded when user ids are case-insensitive).
    func key(for user: String) -> String
    /// Removes devices whose push tokens the service declared dead; returns how many.
    @discardableResult
    func remove(deviceIds: [Int64]) async throws -> Int
    /// Notes that the devices were reached just now (subscription hygiene).
    func markDelivered(deviceIds: [Int64]) async throws
}

/// One push service's sending side: messages to device tokens, and what became of each.
/// Never throws: every failure is an outcome the delivery decision knows how to treat.
package protocol PushSending: Sendable {
    /// One push.
    func send(_ message: PushMessage, to token: String) async -> PushOutcome
    /// A batch, at most `maxInFlight` pushes at once; `onResult` gets each push's result as it
    /// arrives, from any thread, and must be quick. Returns when every push has its result.
    func send(_ batch: PushBatch, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async
}

extension PushSending {
    /// A batch as single pushes, at most `maxInFlight` at once: for senders without a batch
    /// path of their own (test fakes). Like the HTTP/2 client's batches, a cancelled caller
    /// starts no more pushes: those not started come back ``PushOutcome/deferred``.
    package func send(_ batch: PushBatch, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            for (index, push) in batch.pushes.enumerated() {
                if index >= max(1, maxInFlight) && !Task.isCancelled { await group.next() }
                if Task.isCancelled {
                    onResult(PushBatchResult(index: index, outcome: .deferred, duration: nil))
                    continue
                }
                if let deadline = batch.deadline(of: push), deadline <= Date() {
                    onResult(PushBatchResult(index: index, outcome: .expired, duration: nil))
                    continue
                }
                group.addTask {
                    let started = ContinuousClock.now
                    let outcome = await send(batch.messages[push.message], to: push.token)
                    onResult(PushBatchResult(index: index, outcome: outcome, duration: ContinuousClock.now - started))
                }
            }
        }
    }
}

/// Wall time and waiting, injected so that leases, retries and commit intervals are driven by
/// tests rather than waited for.
package protocol DeliveryClock: Sendable {
    /// The current wall time (retry times, expiry checks).
    func now() -> Date
    /// Waits `duration`; throws when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The system's clock: `Date()` and `Task.sleep`.
package struct SystemDeliveryClock: DeliveryClock {
    package init() {}
    package func now() -> Date { Date() }
    package func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

/// A source of random numbers for retry jitter, injected so that schedules are reproducible in
/// tests. `SystemRandomNumberGenerator` in the gateway.
package protocol RandomSource: Sendable {
    func next() -> UInt64
}

/// The system's random source.
package struct SystemRandomSource: RandomSource {
    package init() {}
    package func next() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }
}

/// A ``RandomSource`` seen as a `RandomNumberGenerator`, for APIs that take one.
struct RandomSourceGenerator: RandomNumberGenerator {
    let source: any RandomSource
    mutating func next() -> UInt64 { source.next() }
}
