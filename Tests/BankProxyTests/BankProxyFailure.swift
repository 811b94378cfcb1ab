import BankProxy
import PigeonDomain
import Testing

/// The kind of ``BankProxyError`` a call failed with; nil when it succeeded (any other error is
/// recorded as an issue).
func bankProxyFailure(_ call: () async throws -> Void) async -> BankProxyError.Kind? {
    do {
        try await call()
        return nil
    } catch let error as BankProxyError {
        return error.kind
    } catch {
        Issue.record("not a BankProxyError: \(error)")
        return nil
    }
}
