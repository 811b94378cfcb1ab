import Foundation

/// The outcome of counting one attempt against a rate limit.
package struct RateLimitDecision: Sendable, Equatable {
    /// Attempts in the current window, this one included.
    package var count: Int
    /// Seconds until the window ends.
    package var retryAfterSeconds: Int
    /// Whether this attempt is within the limit.
    package var allowed: Bool

    package init(count: Int, retryAfterSeconds: Int, allowed: Bool) {
        self.count = count
        self.retryAfterSeconds = retryAfterSeconds
        self.allowed = allowed
    }
}
