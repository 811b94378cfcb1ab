import Foundation

/// Turns an FCM HTTP v1 `messages:send` response into a ``PushOutcome``, following the
/// `FcmError` codes Google documents.
package enum FCMResponse {
    package static func classify(status: Int, body: Data, retryAfter: String? = nil, now: Date = Date()) -> PushOutcome {
        if status == 200 {
            let name = (try? JSONDecoder().decode(SendResponse.self, from: body))?.name
            return .accepted(id: name)
        }
        let error = (try? JSONDecoder().decode(ErrorResponse.self, from: body))?.error
        let fcmCode = error?.details?.compactMap(\.errorCode).first
        let statusName = error?.status ?? "HTTP \(status)"
        let reason = fcmCode ?? statusName
        let message = error?.message ?? ""
        let after = RetryAfter.parse(retryAfter, now: now)
        switch (fcmCode, status) {
        case ("UNREGISTERED", _), ("SENDER_ID_MISMATCH", _):
            return .tokenDead(reason: reason, since: nil)
        case ("INVALID_ARGUMENT", _) where message.localizedCaseInsensitiveContains("registration token"):
            return .tokenDead(reason: reason, since: nil)
        case ("UNAVAILABLE", _), ("INTERNAL", _), ("QUOTA_EXCEEDED", _):
            return .retry(reason: reason, after: after, cause: .ofServiceReason(reason))
        case ("THIRD_PARTY_AUTH_ERROR", _):
            return .failed(reason: reason)
        case (_, 401):
            return .refreshCredentials(reason: reason)
        case (_, 429), (_, 500), (_, 502), (_, 503), (_, 504):
            return .retry(reason: reason, after: after, cause: .ofServiceReason(reason))
        default:
            return .failed(reason: message.isEmpty ? reason : "\(reason): \(message)")
        }
    }

    private struct SendResponse: Decodable {
        var name: String?
    }

    private struct ErrorResponse: Decodable {
        struct Body: Decodable {
            var code: Int?
            var message: String?
            var status: String?
            var details: [Detail]?
        }
        struct Detail: Decodable {
            var errorCode: String?
        }
        var error: Body
    }
}
