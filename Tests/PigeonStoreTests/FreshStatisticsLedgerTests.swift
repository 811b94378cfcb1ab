import Testing
@testable import PigeonStore
import PigeonTestSupport

/// When a day's deliveries are analyzed again, decided without a database.
@Suite("Fresh statistics: when a day is analyzed", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct FreshStatisticsLedgerTests {
    let today: Int64 = 20_000
    func key(_ day: Int64, _ serial: Int64 = 1) -> Int64 { day << 40 | serial }

    @Test("a key's day is the one pigeon_notification_key wrote into it (migration 0005: the day shifted by 40 bits, a serial below)")
    func dayOfKey() {
        let serialMask: Int64 = (1 << 40) - 1
        for day: Int64 in [0, 1, 20_426, 20_427, 40_000] {
            #expect(FreshStatistics.day(of: day << 40) == day)
            #expect(FreshStatistics.day(of: day << 40 | serialMask) == day)
            #expect(FreshStatistics.day(of: (day + 1) << 40) == day + 1)
        }
    }

    @Test("small sends add up to the minimum and start one background analysis at a time; what was written meanwhile starts the next as the first ends")
    func minimumAndOneAtATime() {
        var ledger = FreshStatistics.Ledger(policy: .init(minimumRows: 10_000, growth: 0.2))
        for serial in 1...9 {
            #expect(ledger.noteWritten([key(today, Int64(serial)): 1_000]).isEmpty)
        }
        let due = ledger.noteWritten([key(today, 10): 1_000])
        #expect(due.map(\.day) == [today])
        #expect(due.first.map { FreshStatistics.day(of: $0.key) } == today)
        // Running: more rows do not start a second one.
        #expect(ledger.noteWritten([key(today, 11): 5_000]).isEmpty)
        // The first counted what was noted when it started; the 5,000 since are under a fifth of
        // 30,000 rows: nothing more to do.
        #expect(ledger.finished(day: today, rows: 30_000, counted: 10_000) == nil)
        #expect(ledger.writtenSince(day: today) == 5_000)
        // 12,000 since (over 6,000 and the minimum) while the next runs: it starts again as it ends.
        #expect(ledger.noteWritten([key(today, 12): 5_000]).map(\.day) == [today])
        _ = ledger.noteWritten([key(today, 13): 12_000])
        #expect(ledger.finished(day: today, rows: 40_000, counted: 10_000) != nil)
    }

    @Test("once analyzed, a day is analyzed again only after growing by the policy's fraction")
    func growthFraction() {
        var ledger = FreshStatistics.Ledger(policy: .init(minimumRows: 10_000, growth: 0.2))
        #expect(ledger.noteWritten([key(today): 1_000_000]).count == 1)
        #expect(ledger.finished(day: today, rows: 1_000_000, counted: 1_000_000) == nil)
        #expect(ledger.noteWritten([key(today, 2): 199_999]).isEmpty, "a fifth of a million not reached")
        #expect(ledger.noteWritten([key(today, 3): 1]).count == 1)
    }

    @Test("a send big enough by itself is analyzed within its transaction; a small one, or a day already being analyzed, is not")
    func bigSendWithin() {
        var ledger = FreshStatistics.Ledger(policy: .init(minimumRows: 10_000, growth: 0.2))
        #expect(ledger.takeWithin([key(today): 9_999]).isEmpty)
        let within = ledger.takeWithin([key(today, 2): 1_000_000, key(today + 1): 5])
        #expect(within.map(\.day) == [today])
        // While it runs, another big send of the day is not analyzed a second time.
        #expect(ledger.takeWithin([key(today, 3): 1_000_000]).isEmpty)
        #expect(ledger.finishedWithin(day: today, rows: 2_000_000) == nil)
        #expect(ledger.writtenSince(day: today) == 0)
        // Now a fifth of two million is what it takes.
        #expect(ledger.takeWithin([key(today, 4): 399_999]).isEmpty)
        #expect(ledger.takeWithin([key(today, 5): 400_000]).map(\.day) == [today])
    }

    @Test("rows other sends committed while a send's own analysis ran stay noted, and start a background analysis when they are enough")
    func rowsDuringAnInlineAnalysis() {
        var ledger = FreshStatistics.Ledger(policy: .init(minimumRows: 10_000, growth: 0.2))
        _ = ledger.noteWritten([key(today): 3_000])
        #expect(ledger.takeWithin([key(today, 2): 12_000]).count == 1)
        // Another big send commits meanwhile: not analyzed within (one at a time), only noted.
        #expect(ledger.takeWithin([key(today, 3): 12_000]).isEmpty)
        #expect(ledger.noteWritten([key(today, 3): 12_000]).isEmpty)
        // The first counted the 3,000 noted before it; the 12,000 since call for another.
        #expect(ledger.finishedWithin(day: today, rows: 15_000) != nil)
        #expect(ledger.writtenSince(day: today) == 12_000)
    }

    @Test("a failed analysis keeps everything noted, so the next send tries again; old days are forgotten")
    func failureAndOldDays() {
        var ledger = FreshStatistics.Ledger(policy: .init(minimumRows: 100, growth: 0.2))
        #expect(ledger.noteWritten([key(today): 150]).count == 1)
        #expect(ledger.finished(day: today, rows: nil) == nil)
        #expect(ledger.writtenSince(day: today) == 150)
        #expect(ledger.noteWritten([key(today, 2): 1]).count == 1)
        // A big send's analysis abandoned with its transaction: the day can be analyzed again.
        #expect(ledger.finished(day: today, rows: 151, counted: 151) == nil)
        #expect(ledger.takeWithin([key(today, 3): 200]).count == 1)
        _ = ledger.finished(day: today, rows: nil)
        #expect(ledger.takeWithin([key(today, 4): 200]).count == 1)
        _ = ledger.finishedWithin(day: today, rows: 551)
        // Two days in one batch (a send at midnight): each is decided on its own.
        let both = ledger.noteWritten([key(today, 5): 40, key(today + 1): 100])
        #expect(both.map(\.day) == [today + 1])
        _ = ledger.noteWritten([key(today + 5): 1])
        #expect(ledger.writtenSince(day: today) == 0, "days more than two before the newest are dropped")
        #expect(ledger.writtenSince(day: today + 5) == 1)
    }
}
