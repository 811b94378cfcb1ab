import PigeonDelivery
import PushCore
import Synchronization

/// Wallet pass update pushes in memory: each token answered as scripted (accepted when nothing
/// is), once its push starts; a caller cancelled before a push starts (a stopping engine) gets
/// it back unpushed, deferred. Held to the gateway's APNs pushers by PassPushingContractTests.
package final class FakePassPusher: PassPushing {
    private let script: Mutex<[String: [PushOutcome]]>
    private let pushed = Mutex<[String: Int]>([:])

    package init(outcomes: [String: [PushOutcome]] = [:]) { script = Mutex(outcomes) }

    /// Pushes made to `token`.
    package func pushes(to token: String) -> Int { pushed.withLock { $0[token] ?? 0 } }

    /// Every token pushed to.
    package var tokens: Set<String> { pushed.withLock { Set($0.keys) } }

    package func pushUpdates(passTypeIdentifier: String, tokens: [String]) async -> [PushOutcome] {
        tokens.map { token in
            guard !Task.isCancelled else { return .deferred }
            pushed.withLock { $0[token, default: 0] += 1 }
            return script.withLock { script in
                guard var queue = script[token], !queue.isEmpty else { return .accepted(id: nil) }
                let next = queue.removeFirst()
                script[token] = queue
                return next
            }
        }
    }
}
