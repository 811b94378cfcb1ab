import Foundation
import Synchronization

/// At most `perMinute` log lines of one kind a minute (a fixed window); the others are dropped
/// and counted, and the next line written says how many (`suppressedSinceLast`). For lines
/// anyone on the internet can cause (Wallet's `/v1/log`), so the log cannot be filled from
/// outside.
package final class LogBudget: Sendable {
    private let perMinute: Int
    private let state = Mutex<(windowStart: TimeInterval?, written: Int, suppressed: Int)>((nil, 0, 0))

    package init(perMinute: Int) {
        self.perMinute = perMinute
    }

    /// Nil when this line is to be dropped, else how many were dropped since the last one written.
    package func admit(now: TimeInterval = ProcessInfo.processInfo.systemUptime) -> Int? {
        state.withLock { state in
            if state.windowStart.map({ now - $0 >= 60 }) ?? true {
                state.windowStart = now
                state.written = 0
            }
            guard state.written < perMinute else {
                state.suppressed += 1
                return nil
            }
            state.written += 1
            let suppressed = state.suppressed
            state.suppressed = 0
            return suppressed
        }
    }
}
