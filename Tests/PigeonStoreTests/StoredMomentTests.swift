import Foundation
import Testing
@testable import PigeonStore
import PigeonTestSupport

@Suite("Stored moment", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct StoredMomentTests {
    @Test("a stored moment's text: whole milliseconds, UTC, rounded down")
    func storedMomentText() {
        #expect(StoredMoment(Date(timeIntervalSince1970: 1_796_000_000.123_9)).text == "2026-11-30T00:53:20.123Z")
        #expect(StoredMoment(Date(timeIntervalSince1970: 1_796_000_000.007_5)).text == "2026-11-30T00:53:20.007Z")
        #expect(StoredMoment(Date(timeIntervalSince1970: 1_796_000_000)).text == "2026-11-30T00:53:20.000Z")
    }

    @Test("a deadline counts whole milliseconds: the send's timeout added to the stored moment")
    func deadline() {
        let moment = StoredMoment(Date(timeIntervalSince1970: 1_796_000_000.999_9))
        #expect(moment.deadline(timeoutSeconds: 60) == Date(timeIntervalSince1970: 1_796_000_060.999))
        #expect(moment.deadline(timeoutSeconds: 0) == Date(timeIntervalSince1970: 1_796_000_000.999))
    }
}
