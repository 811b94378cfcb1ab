import Foundation

/// A task executor that runs a request's async handler on the connection thread that waits for
/// it. The thread is blocked anyway; letting it run the handler's jobs saves two thread handoffs
/// per request (to the cooperative pool and back) and keeps the pool free for background work.
final class ConnectionThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `finished` are only touched under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.lock()
        jobs.append(unowned)
        condition.signal()
        condition.unlock()
    }

    /// Called by the task as its last step: ``runUntilFinished()`` returns once queued jobs ran.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    /// Runs the jobs enqueued here, on the calling thread, until ``finish()``.
    func runUntilFinished() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished {
                condition.wait()
            }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch {
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
    }
}
