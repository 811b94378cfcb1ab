@testable import PigeonHTTP
@testable import PigeonWallet
import Testing
import PigeonTestSupport

@Suite("Per-address limits", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct RateLimitTests {
    @Test("a fixed window allows the limit, answers the seconds left beyond it, and starts afresh")
    func fixedWindow() {
        var counter = FixedWindowCounter(limit: 3, windowSeconds: 60)
        #expect((0..<3).map { _ in counter.take("a", now: 100) } == [nil, nil, nil])
        #expect(counter.take("a", now: 110) == 50)
        #expect(counter.take("b", now: 110) == nil)
        #expect(counter.take("a", now: 160) == nil)
        var off = FixedWindowCounter(limit: 0, windowSeconds: 60)
        #expect((0..<100).allSatisfy { _ in off.take("a", now: 0) == nil })
    }

    @Test("memory stays bounded: ended windows go first, then the oldest")
    func bounded() {
        var counter = FixedWindowCounter(limit: 1, windowSeconds: 60, capacity: 100)
        for index in 0..<100 { _ = counter.take("old-\(index)", now: 0) }
        for index in 0..<1_000 { _ = counter.take("new-\(index)", now: 61 + Double(index) / 1000) }
        #expect(counter.count <= 100)
        // A key still in its window keeps its count unless it was the oldest.
        #expect(counter.take("new-999", now: 62) == 60)
    }

    @Test("IPv6 clients are counted by their /64, IPv4 ones by their address")
    func clientKeys() {
        #expect(AddressRateLimit.clientKey("2001:db8:1:2::5") == AddressRateLimit.clientKey("2001:db8:1:2:ffff::9"))
        #expect(AddressRateLimit.clientKey("2001:db8:1:2::5") != AddressRateLimit.clientKey("2001:db8:1:3::5"))
        #expect(AddressRateLimit.clientKey("192.0.2.7") == "192.0.2.7")
        #expect(AddressRateLimit.clientKey("::1") == "::1")
    }
}
