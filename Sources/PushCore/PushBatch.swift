import Foundation

/// Pushes sent together: each distinct message once, and the device tokens it goes to, so a
/// transport builds a message's payload once for all of its devices.
package struct PushBatch: Sendable {
    /// One device's push: the index of its message in ``messages`` and the device's token.
    package struct Push: Sendable, Equatable {
        package var message: Int
        package var token: String

        package init(message: Int, token: String) {
            self.message = message
            self.token = token
        }
    }

    package var messages: [PushMessage]
    package var pushes: [Push]
    /// A push that has not started by then is not sent (it comes back `expired`, and the engine
    /// hands its delivery back to the queue when the message's own time has not run out): a
    /// slow service's pushes do not wait in memory for a stream. `nil`: no such limit.
    package var startBy: Date?

    package init(messages: [PushMessage], pushes: [Push], startBy: Date? = nil) {
        self.messages = messages
        self.pushes = pushes
        self.startBy = startBy
    }

    /// The same start limit with other pushes (a part of this batch), and only their messages.
    package func with(pushes: [Push]) -> PushBatch {
        PushBatch(messages: messages, pushes: pushes, startBy: startBy).compacted()
    }

    /// The batch with only the messages its pushes use (renumbered): a transport prepares every
    /// message of a batch, and a confidential notification has one message per device.
    package func compacted() -> PushBatch {
        var position = [Int](repeating: -1, count: messages.count)
        var kept: [PushMessage] = []
        var renumbered = pushes
        for index in renumbered.indices {
            let message = renumbered[index].message
            if position[message] < 0 {
                position[message] = kept.count
                kept.append(messages[message])
            }
            renumbered[index].message = position[message]
        }
        guard kept.count < messages.count else { return self }
        return PushBatch(messages: kept, pushes: renumbered, startBy: startBy)
    }

    /// The time after which `push` must not start: its message's expiry or the batch's
    /// ``startBy``, whichever comes first.
    package func deadline(of push: Push) -> Date? {
        let expiry = messages[push.message].expiresAt
        return startBy.map { min($0, expiry) } ?? expiry
    }
}

/// What became of one push of a ``PushBatch``: its index, its outcome and how long the service
/// took to answer (`nil` when it did not: a transport failure, a message that cannot be sent).
package struct PushBatchResult: Sendable {
    package var index: Int
    package var outcome: PushOutcome
    package var duration: Duration?

    package init(index: Int, outcome: PushOutcome, duration: Duration?) {
        self.index = index
        self.outcome = outcome
        self.duration = duration
    }
}
