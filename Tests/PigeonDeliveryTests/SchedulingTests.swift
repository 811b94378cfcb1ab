import Foundation
import PigeonDomain
import PigeonTestSupport
import Testing
@testable import PigeonDelivery

/// Outbox back-off and sweep pacing as pure logic: the clock and randomness are injected.
@Suite("Report and sweep scheduling", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct SchedulingTests {
    @Test("report back-off doubles from 1 s, stays within ±20 % jitter, and is capped at 5 minutes")
    func backoff() {
        var random = SeededRandom(seed: 7)
        let schedule = ReportSchedule()
        for attempt in 1...12 {
            let expected = min(300.0, pow(2, Double(attempt - 1)))
            let delay = schedule.delay(afterAttempt: attempt, random: &random)
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            #expect(seconds >= expected * 0.8 - 0.001 && seconds <= expected * 1.2 + 0.001, "attempt \(attempt): \(seconds)")
        }
        let now = Date(timeIntervalSince1970: 1_000_000)
        let retry = schedule.retryAt(afterAttempt: 40, now: now, random: &random)
        #expect(retry.timeIntervalSince(now) <= 360)
        #expect(retry.timeIntervalSince(now) >= 240)
    }

    @Test("a sweep step that left work is followed at once; a finished or skipped sweep waits for the interval")
    func pacing() {
        let interval = Duration.seconds(30)
        #expect(SweepPacing.delay(after: SweepStep(rows: 10_000, reports: 1, ran: true, more: true), interval: interval) == .zero)
        #expect(SweepPacing.delay(after: SweepStep(rows: 3, reports: 1, ran: true, more: false), interval: interval) == interval)
        #expect(SweepPacing.delay(after: SweepStep(rows: 0, reports: 0, ran: false, more: false), interval: interval) == interval)
    }
}
