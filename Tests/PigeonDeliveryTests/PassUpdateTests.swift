import Foundation
import PigeonCore
import PigeonDomain
import PigeonTestSupport
import PushCore
import Synchronization
import Testing
@testable import PigeonDelivery

/// The pass update rules as pure logic, and the pass engine over an in-memory queue on a clock
/// the test moves (CONTRACT §7).
@Suite("Pass updates with fakes", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PassUpdateTests {
    static let pass = PassIdentity(passTypeIdentifier: "pass.com.example.card", serialNumber: "s1")
    static func claim(_ state: PassDeliveryState, pushes: Int = 0, failures: Int = 0, device: String = "d1") -> ClaimedPassPush {
        ClaimedPassPush(pass: pass, deviceLibraryIdentifier: device, pushToken: device + "-token", state: state, version: 2,
                        pushes: pushes, failures: failures)
    }

    @Test("a queued claim is pushed; an ended wait is pushed again until 1 + fetchRetries pushes, then expires")
    func steps() {
        let policy = PassUpdatePolicy(fetchTimeout: .seconds(600), fetchRetries: 3)
        #expect(policy.step(for: Self.claim(.queued)) == .push)
        #expect(policy.step(for: Self.claim(.sent, pushes: 1)) == .push)
        #expect(policy.step(for: Self.claim(.sent, pushes: 3)) == .push)
        #expect(policy.step(for: Self.claim(.sent, pushes: 4)) == .expire)
        let none = PassUpdatePolicy(fetchTimeout: .seconds(600), fetchRetries: 0)
        #expect(none.step(for: Self.claim(.sent, pushes: 1)) == .expire)
        // A queued claim is pushed whatever came before (a new version resets the count).
        #expect(none.step(for: Self.claim(.queued, pushes: 0)) == .push)
    }

    @Test("APNs' answers: accepted waits fetchTimeout, dead token, permanent failure, temporary refusals backed off until used up")
    func changes() {
        let policy = PassUpdatePolicy(fetchTimeout: .seconds(600), fetchRetries: 3,
                                      retrySchedule: RetrySchedule(initialDelay: .seconds(1), maximumDelay: .seconds(60), maximumAttempts: 4))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var random = SeededRandom(seed: 3)
        #expect(policy.change(after: .accepted(id: nil), for: Self.claim(.queued), now: now, random: &random)
                == .sent(fetchDeadline: now.addingTimeInterval(600)))
        #expect(policy.change(after: .tokenDead(reason: "Unregistered", since: nil), for: Self.claim(.sent, pushes: 1), now: now, random: &random)
                == .tokenDead(error: "Unregistered"))
        #expect(policy.change(after: .failed(reason: "TopicDisallowed"), for: Self.claim(.queued), now: now, random: &random)
                == .failed(error: "TopicDisallowed"))
        guard case .retry(let at, let error) = policy.change(after: .retry(reason: "ServiceUnavailable", after: .seconds(30)), for: Self.claim(.queued),
                                                             now: now, random: &random) else {
            Issue.record("a 503 is retried")
            return
        }
        #expect(error == "ServiceUnavailable" && at.timeIntervalSince(now) >= 30)
        guard case .retry(let later, _) = policy.change(after: .refreshCredentials(reason: "ExpiredProviderToken"), for: Self.claim(.queued),
                                                        now: now, random: &random) else {
            Issue.record("a refused provider token is retried")
            return
        }
        #expect(later.timeIntervalSince(now) >= 60)
        guard case .failed(let reason) = policy.change(after: .retry(reason: "ServiceUnavailable", after: nil), for: Self.claim(.queued, failures: 3),
                                                       now: now, random: &random) else {
            Issue.record("the fourth failure in a row ends the retries")
            return
        }
        #expect(reason.contains("4 attempts"))
    }

    @Test("the engine pushes a Wallet that never fetches 1 + fetchRetries times on the clock, then expires it; one that fetches is pushed once")
    func engine() async throws {
        let clock = ManualClock()
        let queue = FakePassQueue(clock: clock)
        queue.add(Self.claim(.queued, device: "silent"))
        queue.add(Self.claim(.queued, device: "eager"))
        let pusher = FakePassPusher()
        let engine = PassUpdateEngine(queue: queue, pusher: pusher, policy: PassUpdatePolicy(fetchTimeout: .seconds(600), fetchRetries: 2),
                                      owner: "test", clock: clock, random: CountingRandom(), metrics: MetricsRegistry(), logger: .silent)
        let running = Task { await engine.run() }
        #expect(await eventually { queue.recordedPushes(of: "eager") == 1 && queue.state(of: "eager") == .sent })
        queue.fetched("eager")
        // Each round waits for the push to be recorded (not only made): the next wait is
        // measured from the clock reading of that record.
        for round in 1...2 {
            #expect(await eventually { queue.recordedPushes(of: "silent") == round && queue.state(of: "silent") == .sent })
            // Nothing happens before the wait ends.
            #expect(queue.dueCount == 0)
            clock.advance(by: 601)
        }
        #expect(await eventually { queue.recordedPushes(of: "silent") == 3 && queue.state(of: "silent") == .sent })
        clock.advance(by: 601)
        #expect(await eventually { queue.state(of: "silent") == .expired })
        #expect(pusher.pushes(to: "silent-token") == 3)
        #expect(pusher.pushes(to: "eager-token") == 1)
        #expect(queue.state(of: "eager") == .fetched)
        running.cancel()
        await running.value
    }

    @Test("a dead token removes the Wallet; a temporary refusal keeps the claim and retries it later; a stop hands back what is held")
    func deadAndRetried() async throws {
        let clock = ManualClock()
        let queue = FakePassQueue(clock: clock)
        queue.add(Self.claim(.queued, device: "dead"))
        queue.add(Self.claim(.queued, device: "busy"))
        let pusher = FakePassPusher(outcomes: ["dead-token": [.tokenDead(reason: "Unregistered", since: nil)],
                                               "busy-token": [.retry(reason: "ServiceUnavailable", after: .seconds(5)), .accepted(id: nil)]])
        let engine = PassUpdateEngine(queue: queue, pusher: pusher, policy: PassUpdatePolicy(), owner: "test", clock: clock,
                                      random: CountingRandom(), metrics: MetricsRegistry(), logger: .silent)
        let stop = GracefulStop()
        let running = Task { await engine.run(until: stop) }
        // Waits for the refusal to be recorded: its retry time is read from the clock then.
        #expect(await eventually { queue.state(of: "dead") == nil && queue.failures(of: "busy") == 1 && queue.recordedPushes(of: "busy") == 0 })
        #expect(queue.state(of: "busy") == .queued && pusher.pushes(to: "busy-token") == 1)
        clock.advance(by: 10)
        #expect(await eventually { queue.state(of: "busy") == .sent })
        #expect(pusher.pushes(to: "busy-token") == 2)
        stop.request()
        await running.value
        #expect(queue.released)
    }
}

/// The pass queue in memory: leases on the test's clock.
final class FakePassQueue: PassUpdateQueueing {
    struct Row: Sendable {
        var claim: ClaimedPassPush
        var nextAt: Date?
        var owner: String?
    }

    private let rows = Mutex<[String: Row]>([:])
    private let releasedFlag = Mutex(false)
    let clock: ManualClock

    init(clock: ManualClock) { self.clock = clock }

    func add(_ claim: ClaimedPassPush) {
        rows.withLock { $0[claim.deviceLibraryIdentifier] = Row(claim: claim, nextAt: clock.now()) }
    }

    func state(of device: String) -> PassDeliveryState? { rows.withLock { $0[device]?.claim.state } }
    func failures(of device: String) -> Int? { rows.withLock { $0[device]?.claim.failures } }
    /// Pushes recorded as accepted, once the engine no longer holds the row.
    func recordedPushes(of device: String) -> Int? {
        rows.withLock { rows in rows[device].flatMap { $0.owner == nil ? $0.claim.pushes : nil } }
    }
    var released: Bool { releasedFlag.withLock { $0 } }

    var dueCount: Int {
        let now = clock.now()
        return rows.withLock { $0.values.filter { $0.claim.state.isPending && ($0.nextAt ?? .distantFuture) <= now }.count }
    }

    /// The Wallet downloaded the pass.
    func fetched(_ device: String) {
        rows.withLock { rows in
            rows[device]?.claim.state = .fetched
            rows[device]?.nextAt = nil
            rows[device]?.owner = nil
        }
    }

    func claimPassPushes(owner: String, limit: Int, lease: Duration) async throws -> [ClaimedPassPush] {
        let now = clock.now()
        return rows.withLock { rows in
            var claimed: [ClaimedPassPush] = []
            for (device, row) in rows where row.claim.state.isPending && (row.nextAt ?? .distantFuture) <= now && claimed.count < limit {
                rows[device]?.owner = owner
                rows[device]?.nextAt = now.addingTimeInterval(Double(lease.components.seconds))
                claimed.append(row.claim)
            }
            return claimed
        }
    }

    func recordPassPushes(_ results: [PassPushResult], owner: String) async throws -> Int {
        // As the pool does: a cancelled caller's write is refused.
        try Task.checkCancellation()
        return rows.withLock { rows in
            var changed = 0
            for result in results {
                let device = result.claim.deviceLibraryIdentifier
                guard var row = rows[device], row.owner == owner, row.claim.state.isPending else { continue }
                row.owner = nil
                switch result.change {
                case .sent(let deadline):
                    row.claim.state = .sent
                    row.claim.pushes += 1
                    row.claim.failures = 0
                    row.nextAt = deadline
                case .retry(let at, _):
                    row.claim.failures += 1
                    row.nextAt = at
                case .expired:
                    // Only a SENT one (a fetch awaited) expires, as in PostgreSQL.
                    guard row.claim.state == .sent else { continue }
                    row.claim.state = .expired
                    row.nextAt = nil
                case .failed:
                    row.claim.state = .sendingFailed
                    row.nextAt = nil
                case .tokenDead:
                    rows[device] = nil
                    changed += 1
                    continue
                }
                rows[device] = row
                changed += 1
            }
            return changed
        }
    }

    func releasePassPushes(owner: String) async throws -> Int {
        // As the pool does: a cancelled caller's write is refused.
        try Task.checkCancellation()
        releasedFlag.withLock { $0 = true }
        let now = clock.now()
        return rows.withLock { rows in
            var released = 0
            for (device, row) in rows where row.owner == owner && row.claim.state.isPending {
                rows[device]?.owner = nil
                rows[device]?.nextAt = now
                released += 1
            }
            return released
        }
    }
}

