import Foundation

/// A task executor backed by a fixed number of threads of its own: a listener's handlers run
/// here, so its thread budget is bounded and independent of every other listener and of the
/// cooperative pool (which has as many threads as cores and runs the background work).
final class WorkerThreads: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `stopping` are only touched under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    /// The next job to run; the array is compacted when the consumed prefix grows.
    private var head = 0
    private var stopping = false
    private var running = 0

    /// Starts `count` threads named `name`.
    init(count: Int, name: String) {
        running = max(1, count)
        for index in 0..<running {
            let thread = Thread { [self] in work() }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.lock()
        if stopping && running == 0 {
            condition.unlock()
            // A task that outlived its server still finishes, on a thread of Dispatch's.
            DispatchQueue.global().async { [self] in unowned.runSynchronously(on: asUnownedTaskExecutor()) }
            return
        }
        jobs.append(unowned)
        condition.signal()
        condition.unlock()
    }

    /// Lets the threads end once no job is waiting.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while head == jobs.count && !stopping {
                condition.wait()
            }
            if head == jobs.count {
                running -= 1
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count || head >= 1024 {
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
