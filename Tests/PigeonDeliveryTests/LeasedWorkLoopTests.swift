import Foundation
import PigeonCore
import Synchronization
import Testing
@testable import PigeonDelivery
import PigeonTestSupport

/// The loop shared by the pass, activity and outbox engines.
@Suite("Leased work loop", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct LeasedWorkLoopTests {
    struct WriteFailed: Error {}

    @Test("a result write that fails is tried again 0.2 s, then 0.4 s later on the engine's clock (not in real time), three times in all")
    func recordRetriesOnTheClock() async {
        let clock = VirtualClock()
        let start = clock.now()
        let loop = LeasedWorkLoop<Int>(what: "test results", clock: clock, logger: .silent, idlePoll: .seconds(1), wake: nil)
        let attempts = Mutex(0)
        let writing = Task {
            await loop.record {
                let attempt = attempts.withLock { count -> Int in
                    count += 1
                    return count
                }
                if attempt < 3 { throw WriteFailed() }
            }
        }
        // Parked on the clock after the first failure: nothing is tried again before 0.2 s pass.
        #expect(await eventually { attempts.withLock { $0 } == 1 && clock.nextWake == start.addingTimeInterval(0.2) })
        clock.advance(by: 0.2)
        #expect(await eventually { attempts.withLock { $0 } == 2 && clock.nextWake == start.addingTimeInterval(0.6) })
        clock.advance(by: 0.4)
        await writing.value
        #expect(attempts.withLock { $0 } == 3)
    }
}
