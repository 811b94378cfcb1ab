import Testing
@testable import PigeonDomain
import PigeonTestSupport

@Suite("Reach precision", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ReachPrecisionTests {
    @Test("a thirtieth of the hygiene period, at most a day, at least a second; hygiene waits the period and the precision")
    func precision() {
        #expect(ReachPrecision.forExpiry(.seconds(30 * 86_400)) == .seconds(86_400), "the default period: a day")
        #expect(ReachPrecision.forExpiry(.seconds(365 * 86_400)) == .seconds(86_400), "never more than a day")
        #expect(ReachPrecision.forExpiry(.seconds(3_600)) == .seconds(120), "an hour's period: two minutes")
        #expect(ReachPrecision.forExpiry(.milliseconds(1_000)) == .seconds(1), "never under a second")
        #expect(ReachPrecision.hygieneAge(forExpiry: .seconds(30 * 86_400)) == .seconds(31 * 86_400))
        #expect(ReachPrecision.hygieneAge(forExpiry: .seconds(3_600)) == .seconds(3_720))
    }
}
