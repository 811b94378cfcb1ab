import Foundation

/// Turns a RuStore push `messages:send` answer into a ``PushOutcome``. RuStore answers errors in
/// Google's shape (`{"error": {"code", "message", "status"}}`):
/// - 200: accepted;
/// - 404 (`NOT_FOUND`): the token is gone — the device is removed;
/// - 401/403: our service token is wrong or revoked. It is static (made in the RuStore console),
///   so nothing can be refreshed: the push is retried later and the device kept, and the
///   transport raises the alarm (``PushOutcome/credentialsRefusedPrefix``);
/// - 429 and 5xx: retried, not before `Retry-After`;
/// - anything else (400: the message) fails.
package enum RuStoreResponse {
    /// How long a push refused for our credentials waits before it is tried again.
    package static let credentialsRetryDelay: Duration = .seconds(60)

    package static func classify(status: Int, body: Data, retryAfter: String? = nil, now: Date = Date()) -> PushOutcome {
        let error = (try? JSONDecoder().decode(ErrorResponse.self, from: body))?.error
        let reason = error?.status ?? "HTTP \(status)"
        switch status {
        case 200:
            return .accepted(id: nil)
        case 404:
            return .tokenDead(reason: reason, since: nil)
        case 401, 403:
            return .retry(reason: PushOutcome.credentialsRefusedPrefix + reason, after: credentialsRetryDelay, cause: .credentials)
        case 429, 500, 502, 503, 504:
            return .retry(reason: status == 429 ? "HTTP 429" : reason, after: RetryAfter.parse(retryAfter, now: now),
                          cause: status == 429 ? .throttled : .ofServiceReason(reason))
        default:
            let message = error?.message ?? ""
            return .failed(reason: message.isEmpty ? reason : "\(reason): \(message)")
        }
    }

    private struct ErrorResponse: Decodable {
        struct Body: Decodable {
            var code: Int?
            var message: String?
            var status: String?
        }
        var error: Body
    }
}
