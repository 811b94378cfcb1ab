import PigeonDomain
import BankProxy
import PigeonDeviceAPI
import Synchronization

/// The bank's answers about new devices, in memory (as `pigeon bank-stub` gives them over
/// SOAP): users in ``authorizedUsers`` subscribe without a code, everyone else gets a code
/// (``code(userId:deviceId:)``) unless their bank client is unknown; ``failure`` makes every
/// call fail as a bank that is down or answers garbage would.
package final class FakeBank: SubscriptionAuthorizing, Sendable {
    private struct State {
        var authorizedUsers: Set<String> = []
        var knownBankClients: Set<String> = ["bank"]
        var codes: [String: String] = [:]
        var failure: BankProxyError?
        var calls = 0
        var nextCode = 123_456
    }

    private let state = Mutex(State())

    package init(authorizedUsers: Set<String> = []) {
        state.withLock { $0.authorizedUsers = authorizedUsers }
    }

    /// Calls the bank has answered or failed.
    package var calls: Int { state.withLock { $0.calls } }

    /// Who subscribes without a code from now on.
    package func setAuthorized(_ users: Set<String>) { state.withLock { $0.authorizedUsers = users } }

    package func setFailure(_ failure: BankProxyError?) { state.withLock { $0.failure = failure } }

    /// The code the bank last sent to this device, if any.
    package func code(userId: String, deviceId: String) -> String? {
        state.withLock { $0.codes[userId + "\u{1F}" + deviceId] }
    }

    private func answer(bankClientId: String, _ decide: (inout State) -> Bool) throws(BankProxyError) -> Bool {
        let result: Result<Bool, BankProxyError> = state.withLock { state in
            state.calls += 1
            if let failure = state.failure { return .failure(failure) }
            guard state.knownBankClients.contains(bankClientId) else {
                return .failure(BankProxyError(.bankClientNotExists, "unknown bank client \(bankClientId)"))
            }
            return .success(decide(&state))
        }
        return try result.get()
    }

    package func checkSubscriptionAuthorized(_ request: SubscriptionRequest) async throws(BankProxyError) -> Bool {
        try answer(bankClientId: request.bankClientId) { $0.authorizedUsers.contains(request.userId) }
    }

    package func authorizeSubscription(_ request: SubscriptionRequest) async throws(BankProxyError) -> Bool {
        try answer(bankClientId: request.bankClientId) { state in
            state.nextCode += 1
            state.codes[request.userId + "\u{1F}" + request.deviceId] = String(state.nextCode)
            return true
        }
    }

    package func verifySubscriptionAuthorization(bankClientId: String, userId: String, deviceId: String, code: String) async throws(BankProxyError) -> Bool {
        try answer(bankClientId: bankClientId) { $0.codes[userId + "\u{1F}" + deviceId] == code }
    }
}
