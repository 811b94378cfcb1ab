import Foundation
import PigeonCore
import Testing
import PigeonTestSupport

@Suite("Log budget", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct LogBudgetTests {
    @Test("at most the budget's lines a minute; the next line written after the minute tells how many were dropped")
    func budget() {
        let budget = LogBudget(perMinute: 3)
        #expect((0..<3).map { budget.admit(now: 100 + Double($0)) } == [0, 0, 0])
        #expect((0..<50).compactMap { budget.admit(now: 110 + Double($0) / 10) }.isEmpty)
        #expect(budget.admit(now: 160) == 50)
        #expect(budget.admit(now: 161) == 0)
    }
}
