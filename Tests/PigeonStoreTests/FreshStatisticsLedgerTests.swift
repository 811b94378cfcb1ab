import Testing
@testable import PigeonStore

/// When a day's deliveries are analyzed again, decided without a database.
@Suite("Fresh statistics: when a day is analyzed")
struct FreshStatisticsLedgerTests {
    let today: Int64 = 20_000
    func key(_ day: Int64, _ serial: Int64 = 1) -> Int64 { day << 40 | serial }

    @Test("a day is analyzed once its new rows reach the minimum; small sends add up; one analysis at a time")
    func minimumAndOneAtATime() {
        var ledger = FreshStatistics.Ledger(policy: .init(minimumRows: 10_000, growth: 0.2))
        for serial in 1...9 {
            #expect(ledger.noteWritten([key(today, Int64(serial)): 1_000]).isEmpty)
        }
        let due = ledger.noteWritten([key(today, 10): 1_000])
        #expect(due.map(\.day) == [today])
        #expect(due.first.map { FreshStatistics.day(of: $0.key) } == today)
        // Running: a blast now does not start a second one.
        #expect(ledger.noteWritten([key(today, 11): 1_000_000]).isEmpty)
        // The first counted what was noted when it started; the blast's rows still wait.
        ledger.finished(day: today, rows: 10_000, counted: 10_000)
        #expect(ledger.writtenSince(day: today) == 1_000_000)
        #expect(ledger.noteWritten([key(today, 12): 1]).map(\.day) == [today])
    }

    @Test("once analyzed, a day is analyzed again only after growing by the policy's fraction")
    func growthFraction() {
        var ledger = FreshStatistics.Ledger(policy: .init(minimumRows: 10_000, growth: 0.2))
        #expect(ledger.noteWritten([key(today): 1_000_000]).count == 1)
        ledger.finished(day: today, rows: 1_000_000, counted: 1_000_000)
        #expect(ledger.noteWritten([key(today, 2): 199_999]).isEmpty, "a fifth of a million not reached")
        #expect(ledger.noteWritten([key(today, 3): 1]).count == 1)
    }

    @Test("a failed analysis keeps everything noted, so the next send tries again; old days are forgotten")
    func failureAndOldDays() {
        var ledger = FreshStatistics.Ledger(policy: .init(minimumRows: 100, growth: 0.2))
        #expect(ledger.noteWritten([key(today): 150]).count == 1)
        ledger.finished(day: today, rows: nil)
        #expect(ledger.writtenSince(day: today) == 150)
        #expect(ledger.noteWritten([key(today, 2): 1]).count == 1)
        // Two days in one batch (a send at midnight): each is decided on its own.
        ledger.finished(day: today, rows: 151, counted: 151)
        let both = ledger.noteWritten([key(today, 3): 40, key(today + 1): 100])
        #expect(both.map(\.day) == [today + 1])
        _ = ledger.noteWritten([key(today + 5): 1])
        #expect(ledger.writtenSince(day: today) == 0, "days more than two before the newest are dropped")
        #expect(ledger.writtenSince(day: today + 5) == 1)
    }
}
