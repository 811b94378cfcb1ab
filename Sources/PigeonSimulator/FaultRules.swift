/// Faults the simulator injects, per device or registration token.
package struct FaultRules: Sendable, Equatable {
    package enum Fault: Sendable, Equatable {
        /// APNs 410 Unregistered (with a timestamp) / FCM 404 UNREGISTERED.
        case unregistered
        /// APNs 400 BadDeviceToken / FCM 400 INVALID_ARGUMENT about the token.
        case badDeviceToken
        /// 429 with Retry-After.
        case tooManyRequests
        /// 503.
        case serviceUnavailable
        /// 500.
        case internalError
        /// Refused for good, not for the token: APNs 413 PayloadTooLarge, FCM and RuStore 400
        /// INVALID_ARGUMENT about the message, Huawei 80100003, Web Push 413.
        case rejected
        /// Close the connection without answering.
        case dropConnection
        /// Accept, then send GOAWAY on the connection.
        case goAway
        /// Accept, then lower the connection's SETTINGS_MAX_CONCURRENT_STREAMS to 1 (as APNs may
        /// after a rejected push).
        case lowerStreamLimit
        /// APNs 403 with a key-restriction reason (`UnrelatedKeyIdInToken`,
        /// `BadEnvironmentKeyIdInToken`, `BadEnvironmentKeyInToken`): the provider token's key
        /// is not allowed for this topic or environment (keys restricted since 2025). Other
        /// services answer it as ``rejected``.
        case keyRestricted(reason: String)
        /// Accept after this many milliseconds (provider latency).
        case delay(milliseconds: Int)
        /// 503 after this many milliseconds (a service failing slowly).
        case unavailableAfter(milliseconds: Int)
    }

    /// A fault for a token: always, or the first `times` requests and then success.
    package struct Rule: Sendable, Equatable {
        package var fault: Fault
        package var remaining: Int?

        package init(_ fault: Fault, times: Int? = nil) {
            self.fault = fault
            self.remaining = times
        }
    }

    /// Rules by token; the token `*` applies to every token without a rule of its own.
    package var rules: [String: Rule]

    /// The token that matches every token without a rule of its own.
    package static let anyToken = "*"

    package init(_ rules: [String: Rule] = [:]) {
        self.rules = rules
    }

    /// The fault for this request to `token`, counting down limited rules.
    mutating func next(for token: String) -> Fault? {
        let key = rules[token] == nil ? Self.anyToken : token
        guard var rule = rules[key] else { return nil }
        if let remaining = rule.remaining {
            guard remaining > 0 else { return nil }
            rule.remaining = remaining - 1
            rules[key] = rule
        }
        return rule.fault
    }
}
