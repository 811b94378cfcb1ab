import PigeonDelivery
import PigeonDomain
import PushCore
import Synchronization

/// Activity and widget pushes in memory: each token answered as told (accepted by default) once
/// `answering` returns, pushed one after another; a caller cancelled before a push starts (a
/// stopping engine) gets it back unpushed, deferred. Held to the gateway's pushers by
/// PushersContractTests.
package final class FakeActivityPusher: ActivityPushing {
    private let outcomes: [String: PushOutcome]
    private let answering: @Sendable () async -> Void
    /// Every token pushed to, in the order pushed.
    package let pushed = Mutex<[String]>([])

    package init(outcomes: [String: PushOutcome] = [:], answering: @escaping @Sendable () async -> Void = {}) {
        self.outcomes = outcomes
        self.answering = answering
    }

    package func pushAPNs(_ prepared: (String) throws(PushMessageError) -> APNsPreparedMessage, route: PushRoute, tokens: [String]) async -> [PushOutcome] {
        await answer(tokens)
    }

    package func pushData(_ message: PushMessage, route: PushRoute, tokens: [String]) async -> [PushOutcome] {
        await answer(tokens)
    }

    private func answer(_ tokens: [String]) async -> [PushOutcome] {
        var answers: [PushOutcome] = []
        for token in tokens {
            guard !Task.isCancelled else {
                answers.append(.deferred)
                continue
            }
            pushed.withLock { $0.append(token) }
            await answering()
            answers.append(outcomes[token] ?? .accepted(id: nil))
        }
        return answers
    }
}
