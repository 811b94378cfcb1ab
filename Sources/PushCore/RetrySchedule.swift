import Foundation

/// When to try a failed push again: exponential back-off with jitter, at least what the
/// service asked for (`Retry-After`), never past the notification's expiry, and never for a
/// perishable notification. Pure: the clock's reading and the random source are passed in.
package struct RetrySchedule: Sendable, Equatable {
    package var initialDelay: Duration
    package var maximumDelay: Duration
    package var maximumAttempts: Int

    package init(initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(300), maximumAttempts: Int = 12) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
    }

    /// When attempt number `attempt + 1` may run after attempt `attempt` (1-based) failed with a
    /// temporary error at `now`; `nil` when there must be no further attempt.
    package func nextAttempt(
        after attempt: Int, now: Date, expiresAt: Date, perishable: Bool, serviceDelay: Duration?,
        random: inout some RandomNumberGenerator
    ) -> Date? {
        guard !perishable, attempt < maximumAttempts else { return nil }
        let ceiling = min(maximumDelay, initialDelay * (1 << min(attempt - 1, 30)))
        let ceilingSeconds = Self.seconds(ceiling)
        // Jitter (half to all of the ceiling) spreads the retries of a fan-out that failed at once.
        var delay = Double.random(in: (ceilingSeconds / 2)...ceilingSeconds, using: &random)
        if let serviceDelay { delay = max(delay, Self.seconds(serviceDelay)) }
        let next = now.addingTimeInterval(delay)
        return next < expiresAt ? next : nil
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
