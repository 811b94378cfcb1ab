import Foundation
import Synchronization

/// Lets one log line through per `interval`: an alarm repeated by every push of a fan-out is
/// said once a minute, with the rest counted in the metrics.
final class LogThrottle: Sendable {
    private let interval: TimeInterval
    private let last = Mutex<TimeInterval?>(nil)

    init(interval: TimeInterval) {
        self.interval = interval
    }

    /// True when a line may be logged now.
    func admit(now: TimeInterval = ProcessInfo.processInfo.systemUptime) -> Bool {
        last.withLock { last in
            if let previous = last, now - previous < interval { return false }
            last = now
            return true
        }
    }
}
