import Foundation
import Synchronization

/// Calls per client address and minute, in this process's memory: the first line against a
/// flood, before the database is asked anything. The device API's register and verify calls,
/// the PassKit web service and the console's sign-in each have one. An IPv6 client is counted
/// by its /64 (``DeviceRateLimits/clientKey(_:)``).
final class AddressRateLimit: Sendable {
    private let counter: Mutex<FixedWindowCounter>
    private let clock: @Sendable () -> Double

    /// `perMinute` of 0 switches the limit off.
    init(perMinute: Int, clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        counter = Mutex(FixedWindowCounter(limit: perMinute, windowSeconds: 60))
        self.clock = clock
    }

    /// Counts a call from `address`: nil when allowed, else the seconds until its window ends.
    func take(_ address: String) -> Int? {
        let now = clock()
        let key = DeviceRateLimits.clientKey(address)
        return counter.withLock { $0.take(key, now: now) }
    }

    /// Whether `address` has used up its minute, without counting a call: nil when it may go
    /// on, else the seconds until its window ends.
    func exhausted(_ address: String) -> Int? {
        let now = clock()
        let key = DeviceRateLimits.clientKey(address)
        return counter.withLock { $0.exhausted(key, now: now) }
    }
}
