import Foundation
import PigeonCore
import Synchronization

/// A fixed set of worker threads, each owning one libpq connection, fed from one bounded job
/// queue. Async callers submit blocking work with ``withConnection(_:)``; libpq never runs on the
/// Swift cooperative pool.
///
/// Connections are opened lazily and replaced whenever a job finds one dead: the job's error goes
/// back to its caller and the next job gets a fresh connection. Only a job its caller marks
/// `idempotent` (reads) is run again on the fresh connection after its first statement found the
/// old one dead: a write whose reply was lost may have committed, and only its caller can know
/// whether doing it again is safe.
package final class PostgresPool: Sendable {
    /// Pool sizing and per-connection set-up.
    package struct Configuration: Sendable {
        package var settings: PostgresConnectionSettings
        /// Worker threads, and so connections.
        package var size: Int
        /// Jobs allowed to wait for a worker before submissions fail with `overloaded`.
        package var maxWaitingJobs: Int
        /// `statement_timeout` set on every connection, in milliseconds (0: none).
        package var statementTimeoutMilliseconds: Int

        package init(settings: PostgresConnectionSettings, size: Int = 8, maxWaitingJobs: Int = 10_000, statementTimeoutMilliseconds: Int = 30_000) {
            self.settings = settings
            self.size = size
            self.maxWaitingJobs = maxWaitingJobs
            self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
        }
    }

    private let queue: JobQueue
    private let running = DispatchGroup()
    private let configuration: Configuration
    private let busy = BusyWorkers()

    /// What the pool is doing now, for the metrics.
    package struct Statistics: Sendable, Equatable {
        /// Connections (worker threads) in all.
        package var size: Int
        /// Connections running a job now.
        package var busy: Int
        /// Jobs waiting for a connection.
        package var waiting: Int
        /// Jobs refused because `maxWaitingJobs` were already waiting, since start.
        package var overloaded: Int
        /// Jobs a connection started, since start.
        package var started: Int
        /// The time those jobs waited for a connection, in all, since start.
        package var waitedSeconds: Double
    }

    package var statistics: Statistics {
        let queued = queue.counts
        let counts = busy.counts.withLock { $0 }
        return Statistics(size: max(1, configuration.size), busy: counts.busy, waiting: queued.waiting, overloaded: queued.refused,
                          started: counts.started, waitedSeconds: Double(counts.waitedNanoseconds) / 1e9)
    }

    package init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        let queue = JobQueue(limit: configuration.maxWaitingJobs)
        self.queue = queue
        for index in 0..<max(1, configuration.size) {
            let worker = Worker(configuration: configuration, queue: queue, busy: busy, logger: logger)
            let running = self.running
            running.enter()
            let thread = Thread {
                worker.run()
                running.leave()
            }
            thread.name = "pigeon-db-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Runs `body` on a pooled connection and returns its result. With `idempotent`, a run whose
    /// first statement found the connection dead is repeated once on a fresh one.
    ///
    /// A caller cancelled while its job still waits for a connection gets `CancellationError` at
    /// once and the job never runs; a job a worker has started runs to its end (a statement in
    /// flight is not abandoned half-way).
    package func withConnection<T: Sendable>(idempotent: Bool = false, _ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let ticket = JobTicket()
        let waiting = Mutex<CheckedContinuation<T, any Error>?>(nil)
        // Exactly one of the job, its failure and the cancellation answers the caller.
        @Sendable func answer(_ result: Result<T, any Error>) {
            waiting.withLock { continuation in
                defer { continuation = nil }
                return continuation
            }?.resume(with: result)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                waiting.withLock { $0 = continuation }
                guard !ticket.isCancelled else {
                    answer(.failure(CancellationError()))
                    return
                }
                // Errors propagate to the worker, which may retry on a fresh connection before
                // giving up through `fail`.
                let job = Job(idempotent: idempotent, ticket: ticket) { connection in
                    answer(.success(try body(connection)))
                } fail: { error in
                    answer(.failure(error))
                }
                queue.submit(job)
            }
        } onCancel: {
            if ticket.cancel() { answer(.failure(CancellationError())) }
        }
    }

    /// Queues `body` for a pooled connection without waiting for it; `failure` is called instead
    /// when no connection can be had (pool closed or overloaded, server unreachable) or when
    /// `body` throws.
    package func submit(_ body: @escaping @Sendable (PostgresConnection) throws -> Void, failure: @escaping @Sendable (any Error) -> Void) {
        queue.submit(Job(idempotent: false, ticket: JobTicket(), run: body, fail: failure))
    }

    /// Runs `body` in a transaction on a pooled connection.
    package func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await withConnection { connection in try connection.transaction(body) }
    }

    /// Fails waiting jobs, lets running ones finish (up to `timeout`), and closes every connection.
    package func close(timeout: Duration = .seconds(10)) {
        queue.close()
        let seconds = timeout.inSeconds
        _ = running.wait(timeout: .now() + seconds)
    }
}

/// Whether a job may still start: cancelled by its caller while waiting, it never runs; started by
/// a worker, it runs to its end.
private final class JobTicket: Sendable {
    private enum State { case waiting, started, cancelled }
    private let state = Mutex(State.waiting)

    /// True, and the job is the worker's, unless its caller cancelled it first.
    func start() -> Bool {
        state.withLock { state in
            guard case .waiting = state else { return false }
            state = .started
            return true
        }
    }

    /// True when the cancellation came before any worker started the job.
    func cancel() -> Bool {
        state.withLock { state in
            guard case .waiting = state else { return false }
            state = .cancelled
            return true
        }
    }

    var isCancelled: Bool {
        state.withLock { state in
            if case .cancelled = state { return true }
            return false
        }
    }
}

/// One unit of work: `run` gets a connection; `fail` is called instead when none can be had.
private struct Job: Sendable {
    /// Safe to run again after a connection failure (it only reads).
    let idempotent: Bool
    let ticket: JobTicket
    let run: @Sendable (PostgresConnection) throws -> Void
    let fail: @Sendable (any Error) -> Void
    /// When it was submitted (monotonic nanoseconds): how long it waited for a connection.
    let submittedAt = DispatchTime.now().uptimeNanoseconds

    init(idempotent: Bool, ticket: JobTicket, run: @escaping @Sendable (PostgresConnection) throws -> Void,
         fail: @escaping @Sendable (any Error) -> Void) {
        self.idempotent = idempotent
        self.ticket = ticket
        self.run = run
        self.fail = fail
    }
}

/// How many workers run a job now, and how long the jobs started so far waited for one.
private final class BusyWorkers: Sendable {
    struct Counts {
        var busy = 0
        var started = 0
        var waitedNanoseconds: UInt64 = 0
    }

    let counts = Mutex(Counts())
}

/// A bounded FIFO of jobs shared by the workers.
private final class JobQueue: @unchecked Sendable {
    // @unchecked: every field is read and written under `condition`.
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var head = 0
    private var closed = false
    private var refused = 0
    private let limit: Int

    /// Jobs waiting now, and refused for a full queue since start.
    var counts: (waiting: Int, refused: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (jobs.count - head, refused)
    }

    init(limit: Int) {
        self.limit = limit
    }

    func submit(_ job: Job) {
        condition.lock()
        if closed {
            condition.unlock()
            job.fail(PostgresError(.poolClosed, "the database pool is closed"))
            return
        }
        if jobs.count - head >= limit {
            refused += 1
            condition.unlock()
            job.fail(PostgresError(.overloaded, "more than \(limit) queries are waiting for a connection"))
            return
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// The next job, or `nil` once the queue is closed.
    func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while head == jobs.count && !closed {
            condition.wait()
        }
        guard head < jobs.count, !closed else { return nil }
        let job = jobs[head]
        head += 1
        if head > 1024 && head * 2 > jobs.count {
            jobs.removeFirst(head)
            head = 0
        }
        return job
    }

    func close() {
        condition.lock()
        closed = true
        let abandoned = jobs[head...]
        jobs = []
        head = 0
        condition.broadcast()
        condition.unlock()
        for job in abandoned {
            job.fail(PostgresError(.poolClosed, "the database pool is closed"))
        }
    }
}

/// The loop of one worker thread.
private final class Worker: @unchecked Sendable {
    // @unchecked: `connection` is touched only by the worker's own thread inside `run()`.
    private let configuration: PostgresPool.Configuration
    private let queue: JobQueue
    private let busy: BusyWorkers
    private let logger: Logger
    private var connection: PostgresConnection?

    init(configuration: PostgresPool.Configuration, queue: JobQueue, busy: BusyWorkers, logger: Logger) {
        self.configuration = configuration
        self.queue = queue
        self.busy = busy
        self.logger = logger
    }

    func run() {
        while let job = queue.next() {
            // A job whose caller was cancelled while it waited has been answered already.
            guard job.ticket.start() else { continue }
            let waited = DispatchTime.now().uptimeNanoseconds &- job.submittedAt
            busy.counts.withLock { counts in
                counts.busy += 1
                counts.started += 1
                counts.waitedNanoseconds &+= waited
            }
            perform(job, retryOnStaleConnection: true)
            busy.counts.withLock { $0.busy -= 1 }
        }
        connection = nil
    }

    private func perform(_ job: Job, retryOnStaleConnection: Bool) {
        let connection: PostgresConnection
        do {
            connection = try connected()
        } catch {
            job.fail(error)
            return
        }
        connection.beginJob()
        do {
            try job.run(connection)
        } catch let error as PostgresError where error.isConnectionFailure || !connection.isUsable {
            self.connection = nil
            if job.idempotent && retryOnStaleConnection && connection.statementsInJob <= 1 {
                logger.warning("database connection lost; running the read again on a new one", metadata: ["error": error.description])
                perform(job, retryOnStaleConnection: false)
            } else {
                logger.warning("database connection lost; it is replaced for the next job", metadata: ["error": error.description])
                job.fail(error)
            }
        } catch {
            // Whatever the job made of it, a dead connection is not handed to the next one.
            if !connection.isUsable { self.connection = nil }
            job.fail(error)
        }
    }

    private func connected() throws(PostgresError) -> PostgresConnection {
        if let connection, connection.isUsable { return connection }
        let fresh = try PostgresConnection(settings: configuration.settings)
        // Every statement is prepared once per connection; planning it again on each execution
        // (PostgreSQL's default for the first runs and whenever custom plans look cheaper) was
        // a third of the database's CPU per sendNotification.
        try fresh.query(sql: "SELECT set_config('plan_cache_mode', $1, false)", ["force_generic_plan"])
        // No JIT compilation: every statement here reads or writes a bounded handful of rows,
        // but a plan whose estimate passes `jit_above_cost` (a claim planned from an empty
        // partition's statistics, the live-day look-up's series of days) was compiled on each
        // execution — 120 ms a look-up on the urgent lane's claim, in front of a one-time code.
        try fresh.query(sql: "SELECT set_config('jit', 'off', false)")
        if configuration.statementTimeoutMilliseconds > 0 {
            try fresh.query(sql: "SELECT set_config('statement_timeout', $1, false)", ["\(configuration.statementTimeoutMilliseconds)"])
        }
        connection = fresh
        return fresh
    }
}
