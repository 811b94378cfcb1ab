import PigeonCore
import Synchronization

/// The handlers of a listener still running, and the waits for none to be: a stop awaits the
/// requests in progress instead of polling a count.
final class HandlersInFlight: Sendable {
    private let running = Mutex(0)
    private let waits = WaitList()

    /// Handlers running now.
    var count: Int { running.withLock { $0 } }

    /// A handler started.
    func begin() {
        running.withLock { $0 += 1 }
    }

    /// A handler answered; the last one ends the waits for idleness.
    func end() {
        let idle = running.withLock { running in
            running -= 1
            return running == 0
        }
        if idle { waits.resumeAll() }
    }

    /// Returns once no handler is running, or when the calling task is cancelled.
    func idle() async {
        await waits.wait { count == 0 }
    }
}
