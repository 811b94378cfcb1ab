import PigeonDelivery
import PigeonDomain
import PushCore
import Synchronization

/// A push service answering through `answer`, remembering every token it was given. Its
/// batches are the seam's default (single pushes, at most `maxInFlight` at once); held to the
/// gateway's HTTP/2 senders by PushSendingContractTests.
package final class FakeSender: PushSending {
    private let answer: @Sendable (String, Int) async -> PushOutcome
    /// Every token pushed to, in the order pushed.
    package let tokens = Mutex<[String]>([])

    /// `answer(token, n)` is the outcome of the n-th push (1-based) to `token`.
    package init(_ answer: @escaping @Sendable (String, Int) async -> PushOutcome = { _, _ in .accepted(id: nil) }) {
        self.answer = answer
    }

    package func send(_ message: PushMessage, to token: String) async -> PushOutcome {
        let count = tokens.withLock { tokens in
            tokens.append(token)
            return tokens.filter { $0 == token }.count
        }
        return await answer(token, count)
    }

    package func pushes(to token: String) -> Int { tokens.withLock { $0.filter { $0 == token }.count } }
}
