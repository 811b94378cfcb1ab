import Foundation
import PushCore
import Synchronization

/// One project's ``MessageQuota``, shared by the senders of both lanes.
package final class QuotaGate: Sendable {
    let quota: Mutex<MessageQuota>

    package init(perMinute: Int, now: Date = Date()) {
        quota = Mutex(MessageQuota(perMinute: perMinute, now: now))
    }
}

/// A push service's sender behind its project's quota: each batch goes out as fast as the quota
/// grants tokens (urgent messages first, see ``MessageQuota``); while the service has paused the
/// project (a quota answer with `Retry-After`), pushes are answered as throttled without being
/// sent, to be retried after the pause.
package final class QuotaSender: PushSending {
    private let sender: any PushSending
    private let gate: QuotaGate
    private let urgent: Bool
    private let clock: any DeliveryClock

    package init(_ sender: any PushSending, gate: QuotaGate, urgent: Bool, clock: any DeliveryClock = SystemDeliveryClock()) {
        self.sender = sender
        self.gate = gate
        self.urgent = urgent
        self.clock = clock
    }

    package func send(_ message: PushMessage, to token: String) async -> PushOutcome {
        guard await admit(1) == 1 else { return Task.isCancelled ? .deferred : pausedOutcome() }
        let outcome = await sender.send(message, to: token)
        noteQuotaAnswer(outcome)
        return outcome
    }

    package func send(_ batch: PushBatch, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        var next = 0
        while next < batch.pushes.count {
            let granted = await admit(batch.pushes.count - next)
            guard granted > 0 else {
                // A stopping sender starts nothing more: those not sent go back unpushed.
                let outcome = Task.isCancelled ? .deferred : pausedOutcome()
                for index in next..<batch.pushes.count { onResult(PushBatchResult(index: index, outcome: outcome, duration: nil)) }
                return
            }
            let part = next..<(next + granted)
            let slice = batch.with(pushes: Array(batch.pushes[part]))
            let offset = next
            await sender.send(slice, maxInFlight: maxInFlight) { result in
                self.noteQuotaAnswer(result.outcome)
                onResult(PushBatchResult(index: offset + result.index, outcome: result.outcome, duration: result.duration))
            }
            next += granted
        }
    }

    /// Up to `wanted` tokens, waiting for the first; 0 when the project is paused (or the task
    /// was cancelled).
    private func admit(_ wanted: Int) async -> Int {
        while true {
            let now = clock.now()
            let (granted, wait, paused) = gate.quota.withLock { quota -> (Int, TimeInterval, Bool) in
                let granted = quota.take(wanted, urgent: urgent, now: now)
                if granted > 0 { return (granted, 0, false) }
                let paused = quota.pausedUntil.map { now < $0 } ?? false
                return (0, quota.wait(urgent: urgent, now: now), paused)
            }
            if granted > 0 { return granted }
            if paused || Task.isCancelled { return 0 }
            do {
                try await clock.sleep(for: .milliseconds(max(1, Int64((wait * 1000).rounded(.up)))))
            } catch {
                return 0
            }
        }
    }

    /// What a push gets while the project is paused: retried after the pause.
    private func pausedOutcome() -> PushOutcome {
        let now = clock.now()
        let left = gate.quota.withLock { $0.pausedUntil.map { max(0, $0.timeIntervalSince(now)) } } ?? 1
        return .retry(reason: "QUOTA_EXCEEDED", after: .milliseconds(Int64((left * 1000).rounded(.up))), cause: .throttled)
    }

    /// A quota answer with a delay pauses the project for everyone.
    private func noteQuotaAnswer(_ outcome: PushOutcome) {
        guard case .retry(let reason, let after?, .throttled) = outcome,
              reason == "QUOTA_EXCEEDED" || reason == "RESOURCE_EXHAUSTED" || reason == "HTTP 429" else { return }
        let until = clock.now().addingTimeInterval(after.inSeconds)
        gate.quota.withLock { $0.pause(until: until) }
    }
}
