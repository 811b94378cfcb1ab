import Foundation

/// When to retry a report the bank did not take: exponential back-off from `first`, doubling per
/// attempt, capped at `maximum`, with ±20 % jitter so that many reports failing together do not
/// return together. Pure: the clock and the randomness come from the caller.
struct ReportSchedule: Sendable {
    var first: Duration = .seconds(1)
    var maximum: Duration = .seconds(300)

    /// The delay after `attempt` failed attempts (1 for the first failure).
    func delay(afterAttempt attempt: Int, random: inout some RandomNumberGenerator) -> Duration {
        let base = first.inSeconds
        let cap = Double(maximum.components.seconds)
        let exponent = Double(min(max(attempt - 1, 0), 30))
        let delay = min(cap, base * pow(2, exponent))
        return .milliseconds(Int64(delay * Double.random(in: 0.8...1.2, using: &random) * 1000))
    }

    /// When a report that failed its `attempt`-th time is due again.
    func retryAt(afterAttempt attempt: Int, now: Date, random: inout some RandomNumberGenerator) -> Date {
        let delay = delay(afterAttempt: attempt, random: &random)
        return now + delay.inSeconds
    }
}
