import Foundation
import PigeonCore
import PigeonTestSupport
@testable import PostgresDriver
import Synchronization
import Testing
@testable import PigeonStore

@Suite("PostgreSQL pool: cancellation (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct PoolCancellationTests {
    @Test("a caller cancelled while its job waits for a connection gets CancellationError at once; the job never runs")
    func cancelledWhileWaiting() async throws {
        let pool = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: try #require(TestDatabase.url)), size: 1),
                                logger: .silent)
        defer { pool.close() }
        // The only connection is busy until the test lets it go (a worker thread waits, not a task).
        let release = DispatchSemaphore(value: 0)
        let busy = Mutex(false)
        let blocker = Task { try await pool.withConnection { _ in busy.withLock { $0 = true }; release.wait() } }
        while !busy.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }

        // Should cancellation not reach the queue, the connection is freed after 30 s and the
        // waiter's job runs: the expectations below then fail instead of hanging.
        let failsafe = Task {
            try? await Task.sleep(for: .seconds(30))
            release.signal()
        }
        defer { failsafe.cancel() }
        let ran = Mutex(false)
        let waiter = Task { try await pool.withConnection { _ in ran.withLock { $0 = true } } }
        waiter.cancel()
        // Answered while the connection is still busy: nothing waited for it.
        await #expect(throws: CancellationError.self) { try await waiter.value }
        release.signal()
        try await blocker.value
        // The worker went past the cancelled job to the next one without running it.
        #expect(try await pool.withConnection { try $0.query(sql: "SELECT 1").scalar } == "1")
        #expect(ran.withLock { $0 } == false)
    }
}
