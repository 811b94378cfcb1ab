import Foundation
import Synchronization

/// Lets one log line through per `interval` seconds and counts the ones it holds back: a line
/// that a flood of clients or every push of a fan-out would repeat is said once in a while,
/// with how many were dropped since.
package final class LogThrottle: Sendable {
    private let interval: TimeInterval
    private let state = Mutex<(last: TimeInterval?, suppressed: Int)>((nil, 0))

    package init(interval: TimeInterval) {
        self.interval = interval
    }

    /// Nil when this line is to be dropped, else how many were dropped since the last one.
    package func admit(now: TimeInterval = ProcessInfo.processInfo.systemUptime) -> Int? {
        state.withLock { state in
            if let last = state.last, now - last < interval {
                state.suppressed += 1
                return nil
            }
            let suppressed = state.suppressed
            state = (now, 0)
            return suppressed
        }
    }
}
