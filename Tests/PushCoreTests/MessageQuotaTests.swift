import Foundation
import PushCore
import Testing
import PigeonTestSupport

@Suite("Message quota", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct MessageQuotaTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a second's worth is held; other messages leave a tenth for urgent ones; tokens come back at the per-minute rate")
    func reserveAndRefill() {
        var quota = MessageQuota(perMinute: 6000, now: start)
        #expect(quota.capacity == 100 && quota.reserve == 10)
        #expect(quota.take(500, urgent: false, now: start) == 90)
        #expect(quota.take(1, urgent: false, now: start) == 0)
        #expect(quota.wait(urgent: false, now: start) > 0)
        #expect(quota.wait(urgent: true, now: start) == 0)
        #expect(quota.take(500, urgent: true, now: start) == 10)
        #expect(quota.take(1, urgent: true, now: start) == 0)
        // 0.5 s later: 50 tokens back (100 a second), 40 of them for anyone.
        let later = start.addingTimeInterval(0.5)
        #expect(quota.take(500, urgent: false, now: later) == 40)
        // Never more than a second's worth, however long it was idle.
        let much = later.addingTimeInterval(3600)
        #expect(quota.take(10_000, urgent: true, now: much) == 100)
    }

    @Test("a quota answer pauses the project for every message until its time")
    func pause() {
        var quota = MessageQuota(perMinute: 600_000, now: start)
        quota.pause(until: start.addingTimeInterval(30))
        #expect(quota.take(1, urgent: true, now: start.addingTimeInterval(29)) == 0)
        #expect(quota.wait(urgent: true, now: start.addingTimeInterval(20)) == 10)
        #expect(quota.take(1, urgent: true, now: start.addingTimeInterval(30)) == 1)
        // A shorter pause does not shorten a longer one.
        quota.pause(until: start.addingTimeInterval(60))
        quota.pause(until: start.addingTimeInterval(40))
        #expect(quota.pausedUntil == start.addingTimeInterval(60))
    }

    @Test("a tiny quota still lets one message through at a time")
    func tiny() {
        var quota = MessageQuota(perMinute: 1, now: start)
        #expect(quota.capacity == 1 && quota.reserve == 0)
        #expect(quota.take(5, urgent: false, now: start) == 1)
        #expect(quota.take(5, urgent: true, now: start.addingTimeInterval(30)) == 0)
        #expect(quota.take(5, urgent: true, now: start.addingTimeInterval(60)) == 1)
    }
}
