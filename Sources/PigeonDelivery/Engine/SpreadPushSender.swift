import PushCore
import Synchronization

/// One push service's sending spread over several senders, each on its own HTTP/2 client (its own
/// thread and connections): a batch is dealt out between them in turn, so one service's pushes
/// use every core instead of one client's thread.
package final class SpreadPushSender: PushSending {
    private let senders: [any PushSending]
    private let next = Atomic(0)

    /// `senders` must not be empty.
    package init(_ senders: [any PushSending]) {
        precondition(!senders.isEmpty, "a spread sender needs a sender")
        self.senders = senders
    }

    /// One push, through the senders in turn.
    package func send(_ message: PushMessage, to token: String) async -> PushOutcome {
        let turn = next.add(1, ordering: .relaxed).oldValue
        return await senders[turn % senders.count].send(message, to: token)
    }

    /// The batch dealt out push by push between the senders, each getting its share of
    /// `maxInFlight` (never more senders than pushes allowed in flight, so the shares add up to
    /// at most `maxInFlight`); every result comes back under the push's index in `batch`.
    package func send(_ batch: PushBatch, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        let parts = min(senders.count, batch.pushes.count, max(1, maxInFlight))
        guard parts > 1 else {
            return await senders[0].send(batch, maxInFlight: maxInFlight, onResult: onResult)
        }
        var indices = [[Int]](repeating: [], count: parts)
        for index in batch.pushes.indices { indices[index % parts].append(index) }
        let share = max(1, maxInFlight / parts)
        await withTaskGroup(of: Void.self) { group in
            for (part, positions) in indices.enumerated() {
                let sender = senders[part]
                let slice = batch.with(pushes: positions.map { batch.pushes[$0] })
                group.addTask {
                    await sender.send(slice, maxInFlight: share) { result in
                        onResult(PushBatchResult(index: positions[result.index], outcome: result.outcome, duration: result.duration))
                    }
                }
            }
        }
    }
}
