import Foundation
import Synchronization

/// Calls per client address and minute, in this process's memory: the first line against a
/// flood, before the database is asked anything. The device API's register and verify calls,
/// the PassKit web service and the console's sign-in each have one. An IPv6 client is counted
/// by its /64 (``clientKey(_:)``).
package final class AddressRateLimit: Sendable {
    private let counter: Mutex<FixedWindowCounter>
    private let clock: @Sendable () -> Double

    /// The clock in-memory limits count on unless given another: seconds since the machine
    /// started, which a change of the wall clock does not move.
    package static let uptime: @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }

    /// `perMinute` of 0 switches the limit off.
    package init(perMinute: Int, clock: @escaping @Sendable () -> Double = AddressRateLimit.uptime) {
        counter = Mutex(FixedWindowCounter(limit: perMinute, windowSeconds: 60))
        self.clock = clock
    }

    /// Counts a call from `address`: nil when allowed, else the seconds until its window ends.
    package func take(_ address: String) -> Int? {
        let now = clock()
        let key = Self.clientKey(address)
        return counter.withLock { $0.take(key, now: now) }
    }

    /// Counts a call from `address` presenting `credential` (a user name, say): each pair has a
    /// budget of its own, so one client's wrong password does not use up another's. Nil when
    /// allowed, else the seconds until its window ends.
    package func take(_ address: String, credential: String) -> Int? {
        let now = clock()
        let key = Self.clientKey(address) + " " + credential
        return counter.withLock { $0.take(key, now: now) }
    }

    /// Whether `address` has used up its minute, without counting a call: nil when it may go
    /// on, else the seconds until its window ends.
    package func exhausted(_ address: String) -> Int? {
        let now = clock()
        let key = Self.clientKey(address)
        return counter.withLock { $0.exhausted(key, now: now) }
    }

    /// The key a client address is counted under: an IPv4 address itself, an IPv6 address by its
    /// /64 (one subscriber's network: counting single IPv6 addresses would let one client take
    /// a fresh address for every call).
    package static func clientKey(_ address: String) -> String {
        guard address.contains(":") else { return address }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        let prefix = withUnsafeBytes(of: bytes) { Array($0.prefix(8)) }
        if prefix == [0, 0, 0, 0, 0, 0, 0, 0] { return address }  // ::1, IPv4-mapped: keep whole
        return prefix.map { String(format: "%02x", $0) }.joined() + "::/64"
    }
}
