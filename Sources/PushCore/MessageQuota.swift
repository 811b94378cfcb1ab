import Foundation

/// A push service project's message budget (FCM: `fcmMessagesPerMinute` per project), applied
/// before sending so a blast cannot burn the quota the next one-time code needs. Pure: the time
/// comes in.
///
/// A token bucket refilled continuously at the per-minute rate, holding a second's worth. Urgent
/// messages take any token; other messages leave `reserve` tokens (a tenth of the bucket) for
/// them, so codes go first within the quota. After the service answers that the quota is
/// exhausted (`429 RESOURCE_EXHAUSTED` / `QUOTA_EXCEEDED`) with a `Retry-After`, the project is
/// paused until then for every message.
package struct MessageQuota: Sendable, Equatable {
    package let perMinute: Int
    /// The most tokens held: a second's worth, one at least.
    package let capacity: Double
    /// Tokens that only urgent messages may take.
    package let reserve: Double
    package private(set) var available: Double
    package private(set) var pausedUntil: Date?
    private var updated: Date

    package init(perMinute: Int, now: Date) {
        self.perMinute = max(1, perMinute)
        capacity = max(1, Double(self.perMinute) / 60)
        reserve = capacity >= 10 ? capacity / 10 : 0
        available = capacity
        updated = now
    }

    /// Takes up to `wanted` tokens at `now`; returns how many were granted (0 while paused).
    package mutating func take(_ wanted: Int, urgent: Bool, now: Date) -> Int {
        refill(now)
        if let pausedUntil, now < pausedUntil { return 0 }
        let floor = urgent ? 0 : reserve
        let granted = max(0, min(Double(wanted), (available - floor).rounded(.down)))
        available -= granted
        return Int(granted)
    }

    /// How long until a message of this kind can be granted a token (zero when one can now).
    package mutating func wait(urgent: Bool, now: Date) -> TimeInterval {
        refill(now)
        if let pausedUntil, now < pausedUntil { return pausedUntil.timeIntervalSince(now) }
        let needed = (urgent ? 1 : reserve + 1) - available
        return needed <= 0 ? 0 : needed * 60 / Double(perMinute)
    }

    /// The service said the quota is exhausted: nothing is sent before `until`.
    package mutating func pause(until: Date) {
        pausedUntil = max(pausedUntil ?? until, until)
    }

    private mutating func refill(_ now: Date) {
        let elapsed = now.timeIntervalSince(updated)
        guard elapsed > 0 else { return }
        available = min(capacity, available + elapsed * Double(perMinute) / 60)
        updated = now
    }
}
