import Foundation
import PushCore

/// One push's answer awaited for a bounded time: the console's test push and
/// `check-config --connect`'s probe of each APNs key.
enum PushAnswer {
    /// The answer of `work`, or nil when `limit` passes first (the work goes on unwatched: a push
    /// client answers every push in the end).
    static func first(of work: @escaping @Sendable () async -> PushOutcome, within limit: Duration) async -> PushOutcome? {
        let answer = FirstAnswer()
        return await withCheckedContinuation { continuation in
            answer.start(continuation)
            Task { answer.give(await work()) }
            Task {
                try? await Task.sleep(for: limit)
                answer.give(nil)
            }
        }
    }
}

/// One continuation resumed once, by whichever answer comes first.
private final class FirstAnswer: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<PushOutcome?, Never>?

    func start(_ continuation: CheckedContinuation<PushOutcome?, Never>) {
        lock.withLock { self.continuation = continuation }
    }

    func give(_ outcome: PushOutcome?) {
        let waiting = lock.withLock { () -> CheckedContinuation<PushOutcome?, Never>? in
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: outcome)
    }
}
