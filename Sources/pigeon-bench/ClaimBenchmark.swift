import Foundation
import PigeonCore
import PigeonStore
import PostgresDriver

/// The delivery engine's claim, timed alone: `rounds` claims of `batch` due deliveries from the
/// database at `url` (which must hold that many QUEUED rows), each handed back afterwards.
enum ClaimBenchmark {
    static func run(url: String, batch: Int, rounds: Int) async throws -> (median: Double, p99: Double, claimed: Int) {
        let pool = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: url), size: 1), logger: .silent)
        defer { pool.close() }
        let queue = DeliveryQueue(pool: pool)
        var times: [Double] = []
        var claimed = 0
        for _ in 0..<rounds {
            let started = ContinuousClock.now
            claimed += try await queue.claim(owner: "bench-claim", limit: batch, lease: .seconds(600)).count
            let took = ContinuousClock.now - started
            times.append(took.inSeconds)
        }
        try await queue.release(owner: "bench-claim")
        times.sort()
        return (times[times.count / 2], times[min(times.count - 1, times.count * 99 / 100)], claimed)
    }
}
