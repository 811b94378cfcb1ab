import Foundation
import PigeonCore
import PigeonDomain
import PigeonDelivery
import PushCore
import Synchronization

/// A clock the test moves: `now()` is what the test set; `sleep` waits the real duration asked
/// for up to 20 ms, so that loops make progress without the test waiting for leases or retry
/// times, and idle loops do not spin.
final class ManualClock: DeliveryClock {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))

    func now() -> Date { current.withLock { $0 } }
    func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
    func sleep(for duration: Duration) async throws { try await Task.sleep(for: min(duration, .milliseconds(20))) }
}

/// A clock the test moves whose waits last as long as asked (real time): a loop waiting an hour
/// for its next poll does not poll again within a test.
final class PatientClock: DeliveryClock {
    private let manual = ManualClock()
    func now() -> Date { manual.now() }
    func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

/// A clock that never sleeps in real time: `sleep` parks the caller until the test moves the
/// time to or past its end (or the task is cancelled). A test waits for a loop to park — for
/// ``nextWake`` to be what it expects — instead of waiting for time to pass, so "nothing happened
/// before the deadline" is a fact, not a guess.
final class VirtualClock: DeliveryClock {
    private struct Sleeper {
        var id: Int
        var until: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Date(timeIntervalSince1970: 1_800_000_000)
        var sleepers: [Sleeper] = []
        var cancelled: Set<Int> = []
        var nextId = 0
    }

    private let state = Mutex(State())

    func now() -> Date { state.withLock { $0.now } }

    /// When the earliest parked sleeper wakes; nil when nothing sleeps.
    var nextWake: Date? { state.withLock { $0.sleepers.map(\.until).min() } }

    func sleep(for duration: Duration) async throws {
        let id = state.withLock { state -> Int in
            state.nextId += 1
            return state.nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    let until = state.now.addingTimeInterval(duration.inSeconds)
                    if until <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, until: until, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time forward and wakes every sleeper whose end it reached.
    func advance(by seconds: TimeInterval) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.addingTimeInterval(seconds)
            let now = state.now
            let due = state.sleepers.filter { $0.until <= now }
            state.sleepers.removeAll { $0.until <= now }
            return due
        }
        due.forEach { $0.continuation.resume() }
    }
}

final class CountingRandom: RandomSource {
    private let state = Mutex<UInt64>(1)
    func next() -> UInt64 {
        state.withLock { state in
            state &+= 0x9E37_79B9_7F4A_7C15
            return state ^ (state >> 31)
        }
    }
}

/// The queue in memory, with leases on the test's clock, and writes that can be made to fail.
final class FakeQueue: DeliveryQueueing {
    struct Row: Sendable {
        var delivery: ClaimedDelivery
        var state: DeliveryState = .queued
        var attempts = 0
        /// When due; `nil` once out of the queue.
        var dueAt: Date?
        var pending: [Int64]?
        var leaseOwner: String?
        var leaseEnds: Date?
        var error: String?
    }

    fileprivate let clock: any DeliveryClock
    private let rows: Mutex<[Row]>
    /// How many writes still fail (a database away).
    let failingWrites = Mutex(0)
    let failedWrites = Mutex(0)
    /// The size of every group written.
    let writtenGroups = Mutex<[Int]>([])

    init(clock: any DeliveryClock, deliveries: [ClaimedDelivery]) {
        self.clock = clock
        rows = Mutex(deliveries.map { Row(delivery: $0, dueAt: clock.now()) })
    }

    var snapshot: [Row] { rows.withLock { $0 } }
    /// The most deliveries leased at once, seen after each claim.
    let mostLeased = Mutex(0)

    /// Stores more deliveries, due now (a send arriving while the engine runs).
    func add(_ deliveries: [ClaimedDelivery]) {
        let now = clock.now()
        rows.withLock { $0 += deliveries.map { Row(delivery: $0, dueAt: now) } }
    }
    func row(_ user: String) -> Row? { snapshot.first { $0.delivery.userId == user } }

    /// The largest `limit` any claim asked for.
    let largestClaim = Mutex(0)
    /// How many claims were made.
    let claims = Mutex(0)

    func claim(owner: String, limit: Int, lease: Duration, band: PriorityBand) async throws -> [ClaimedDelivery] {
        let now = clock.now()
        largestClaim.withLock { $0 = max($0, limit) }
        claims.withLock { $0 += 1 }
        return rows.withLock { rows in
            var claimed: [ClaimedDelivery] = []
            // Highest priority first, then in the order stored, as the queue index reads them.
            let order = rows.indices.sorted { (rows[$0].delivery.priority, -$0) > (rows[$1].delivery.priority, -$1) }
            for index in order where claimed.count < limit {
                guard let due = rows[index].dueAt, due <= now, rows[index].delivery.expiresAt > now,
                      band.contains(rows[index].delivery.priority),
                      rows[index].leaseEnds.map({ $0 <= now }) ?? true else { continue }
                rows[index].attempts += 1
                rows[index].leaseOwner = owner
                rows[index].leaseEnds = now.addingTimeInterval(Double(lease.components.seconds))
                var delivery = rows[index].delivery
                delivery.attempt = rows[index].attempts
                delivery.pendingDevices = rows[index].pending
                delivery.alreadySent = rows[index].state == .sent
                claimed.append(delivery)
            }
            let leased = rows.filter { $0.leaseOwner != nil && $0.dueAt != nil }.count
            mostLeased.withLock { $0 = max($0, leased) }
            return claimed
        }
    }

    func record(_ results: [DeliveryResult], owner: String) async throws -> Int {
        // As the pool does: a cancelled caller's write is refused.
        try Task.checkCancellation()
        let fail = failingWrites.withLock { failing in
            defer { failing = max(0, failing - 1) }
            return failing > 0
        }
        if fail {
            failedWrites.withLock { $0 += 1 }
            throw FakeFailure.databaseAway
        }
        writtenGroups.withLock { $0.append(results.count) }
        return rows.withLock { rows in
            var changed = 0
            for result in results {
                guard let index = rows.firstIndex(where: {
                    $0.delivery.notificationKey == result.delivery.notificationKey && $0.delivery.position == result.delivery.position
                }), rows[index].leaseOwner == owner, rows[index].dueAt != nil,
                   rows[index].state == .queued || result.state == .sent else { continue }
                rows[index].state = result.state
                rows[index].error = result.error
                rows[index].leaseOwner = nil
                rows[index].leaseEnds = nil
                rows[index].dueAt = result.nextAttemptAt ?? (result.state == .queued ? rows[index].dueAt : nil)
                rows[index].pending = result.nextAttemptAt == nil ? rows[index].pending : result.pendingDevices
                changed += 1
            }
            return changed
        }
    }

    /// How many deliveries were handed back unpushed.
    let handedBack = Mutex(0)

    fileprivate func rowsHandedBack(_ deliveries: [ClaimedDelivery], owner: String, due: Date, error: String?) -> Int {
        rows.withLock { rows in
            var changed = 0
            for delivery in deliveries {
                guard let index = rows.firstIndex(where: {
                    $0.delivery.notificationKey == delivery.notificationKey && $0.delivery.position == delivery.position
                }), rows[index].leaseOwner == owner, rows[index].dueAt != nil else { continue }
                rows[index].leaseOwner = nil
                rows[index].leaseEnds = nil
                rows[index].attempts = max(0, rows[index].attempts - 1)
                rows[index].dueAt = due
                if let error { rows[index].error = error }
                changed += 1
            }
            return changed
        }
    }

    func release(owner: String) async throws -> Int {
        rows.withLock { rows in
            var released = 0
            for index in rows.indices where rows[index].leaseOwner == owner {
                rows[index].leaseOwner = nil
                rows[index].leaseEnds = nil
                released += 1
            }
            return released
        }
    }
}

extension FakeQueue {
    func handBack(_ deliveries: [ClaimedDelivery], owner: String, delay: Duration, error: String?) async throws -> Int {
        // As the pool does: a cancelled caller's write is refused.
        try Task.checkCancellation()
        let due = clock.now().addingTimeInterval(Double(delay.components.seconds))
        handedBack.withLock { $0 += deliveries.count }
        return rowsHandedBack(deliveries, owner: owner, due: due, error: error)
    }
}

enum FakeFailure: Error { case databaseAway }

/// Notifications by storage key; held to PostgreSQL's store by NotificationSourceContractTests.
struct FakeNotifications: NotificationSource {
    var notifications: [Int64: PushNotification]
    /// Content only, as the store answers the engine: no recipient list.
    func notification(key: Int64) async throws -> PushNotification? {
        notifications[key].map { notification in
            var content = notification
            content.recipients = []
            return content
        }
    }
}

final class FakeDevices: DeviceDirectory {
    private let devices: Mutex<[String: [Device]]>
    let removed = Mutex<[Int64]>([])
    let reached = Mutex<[Int64]>([])

    /// Runs at each look-up, before it answers (a test moving the clock while a batch is in hand).
    private let onLookup: @Sendable () -> Void

    init(_ devices: [Device], onLookup: @escaping @Sendable () -> Void = {}) {
        self.devices = Mutex(Dictionary(grouping: devices) { $0.userId.lowercased() })
        self.onLookup = onLookup
    }

    func devices(users: [String]) async throws -> [String: [Device]] {
        onLookup()
        let keys = Set(users.map(key(for:)))
        return devices.withLock { $0.filter { keys.contains($0.key) } }
    }

    func key(for user: String) -> String { user.lowercased() }

    func remove(deviceIds: [Int64]) async throws -> Int {
        removed.withLock { $0 += deviceIds }
        return devices.withLock { devices in
            let before = devices.values.joined().count
            devices = devices.mapValues { $0.filter { !deviceIds.contains($0.id) } }
            return before - devices.values.joined().count
        }
    }

    func markDelivered(deviceIds: [Int64]) async throws {
        reached.withLock { $0 += deviceIds }
    }
}

/// A gate a push waits at until the test opens it.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resume = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resume { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

/// Waits (real time, generous deadline: the whole suite shares two cores) until `condition`
/// holds; false when it never did.
func eventually(within seconds: Double = 180, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        // A cancelled caller's sleep returns at once: answer now instead of spinning to the deadline.
        if Task.isCancelled { return condition() }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// ``eventually(within:_:)`` for a condition that must be awaited.
func eventuallyAwaiting(within seconds: Double = 180, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        if Task.isCancelled { return await condition() }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}
