import Foundation

/// Pushes sent together: each distinct message once, and the device tokens it goes to, so a
/// transport builds a message's payload once for all of its devices.
public struct PushBatch: Sendable {
    /// One device's push: the index of its message in ``messages`` and the device's token.
    public struct Push: Sendable, Equatable {
        public var message: Int
        public var token: String

        public init(message: Int, token: String) {
            self.message = message
            self.token = token
        }
    }

    public var messages: [PushMessage]
    public var pushes: [Push]
    /// A push that has not started by then is not sent (it comes back `expired`, and the engine
    /// hands its delivery back to the queue when the message's own time has not run out): a
    /// slow service's pushes do not wait in memory for a stream. `nil`: no such limit.
    public var startBy: Date?

    public init(messages: [PushMessage], pushes: [Push], startBy: Date? = nil) {
        self.messages = messages
        self.pushes = pushes
        self.startBy = startBy
    }

    /// The same start limit with other pushes (a part of this batch), and only their messages.
    public func with(pushes: [Push]) -> PushBatch {
        PushBatch(messages: messages, pushes: pushes, startBy: startBy).compacted()
    }

    /// The batch with only the messages its pushes use (renumbered): a transport prepares every
    /// message of a batch, and a confidential notification has one message per device.
    public func compacted() -> PushBatch {
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
    public func deadline(of push: Push) -> Date? {
        let expiry = messages[push.message].expiresAt
        return startBy.map { min($0, expiry) } ?? expiry
    }
}

/// What became of one push of a ``PushBatch``: its index, its outcome and how long the service
/// took to answer (`nil` when it did not: a transport failure, a message that cannot be sent).
public struct PushBatchResult: Sendable {
    public var index: Int
    public var outcome: PushOutcome
    public var duration: Duration?

    public init(index: Int, outcome: PushOutcome, duration: Duration?) {
        self.index = index
        self.outcome = outcome
        self.duration = duration
    }
}
