import Foundation
import PigeonDomain
import Testing
@testable import PigeonDelivery
import PigeonTestSupport

/// How a lane keeps a slow push service from holding its room: pure bookkeeping on a given clock.
@Suite("Route holds", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct RouteHoldsTests {
    let ios = PushRoute(platform: .ios)
    let android = PushRoute(platform: .android)
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a healthy route is never capped: one service's blast may use the whole lane")
    func healthyRouteIsNotCapped() {
        let holds = RouteHolds(cap: 2, slowAfter: .seconds(2))
        let admission = holds.admit(Array(repeating: [ios], count: 10), now: start)
        #expect(admission.admitted == Array(repeating: true, count: 10))
        #expect(holds.held(ios) == 10)
        #expect(admission.turnedSlow.isEmpty)
    }

    @Test("a route with a late answer or a push that could not start is slow: beyond its cap, its deliveries are refused; others pass")
    func slowRouteIsCapped() {
        let holds = RouteHolds(cap: 2, slowAfter: .seconds(2))
        #expect(holds.admit([[android], [android]], now: start).admitted == [true, true])
        holds.answered(android, slow: false, now: start)
        #expect(!holds.isSlow(android, now: start))
        holds.answered(android, slow: true, now: start.addingTimeInterval(2))
        let later = start.addingTimeInterval(2)
        let admission = holds.admit([[android], [ios], [ios, android], []], now: later)
        #expect(admission.admitted == [false, true, false, true])
        #expect(admission.turnedSlow == [android])
        #expect(holds.held(android) == 2)
        #expect(holds.held(ios) == 1)
        // One of its deliveries decided: room for one more, even while slow.
        holds.release([android])
        #expect(holds.admit([[android], [android]], now: later).admitted == [true, false])
    }

    @Test("a route stays slow for a while after its last late answer, then recovers")
    func slowForAWhile() {
        let holds = RouteHolds(cap: 1, slowAfter: .seconds(2), memoryFactor: 5)
        _ = holds.admit([[android]], now: start)
        holds.answered(android, slow: true, now: start.addingTimeInterval(1))
        // Remembered for 5 × 2 s.
        #expect(holds.isSlow(android, now: start.addingTimeInterval(10.9)))
        #expect(!holds.isSlow(ios, now: start.addingTimeInterval(10.9)))
        #expect(holds.admit([[android]], now: start.addingTimeInterval(10.9)).admitted == [false])
        let recovered = holds.admit([[android]], now: start.addingTimeInterval(11))
        #expect(recovered.admitted == [true])
        #expect(recovered.recovered == [android])
    }
}
