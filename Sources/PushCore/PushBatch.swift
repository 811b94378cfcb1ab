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

    public init(messages: [PushMessage], pushes: [Push]) {
        self.messages = messages
        self.pushes = pushes
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
