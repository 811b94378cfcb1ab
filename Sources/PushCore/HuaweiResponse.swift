import Foundation

/// Turns Huawei Push Kit's answer to a single-token `messages:send` request into a
/// ``PushOutcome``. Huawei answers with a result code in the body (`{"code": "80000000", "msg":
/// …}`), whatever the HTTP status:
/// - 80000000: sent;
/// - 80100000 (some tokens failed): the token is dead only if the answer names it among the
///   illegal ones (`msg` is a JSON object listing them); otherwise it was sent;
/// - 80300007 (all tokens invalid): dead — for a request of one token, which is all the gateway
///   sends (Huawei also answers it for another app's tokens, so it is never applied to a batch);
/// - 80200001 / 80200003 (OAuth error, token expired; HTTP 401): refresh the access token, try again;
/// - 80600003 (the OAuth token could not be had) and 81000001 (internal error): retry;
/// - HTTP 503 is Huawei's traffic control, 502/500/504 and 429 passing trouble: retry with back-off;
/// - any other code is the message's or the configuration's problem: failed.
package enum HuaweiResponse {
    package static func classify(status: Int, body: Data, token: String, retryAfter: String? = nil, now: Date = Date()) -> PushOutcome {
        let answer = try? JSONDecoder().decode(Answer.self, from: body)
        let code = answer?.code ?? ""
        let message = answer?.msg ?? ""
        let after = RetryAfter.parse(retryAfter, now: now)
        switch (code, status) {
        case ("80000000", _):
            return .accepted(id: answer?.requestId)
        case ("80100000", _):
            return illegalTokens(in: message).contains(token) ? .tokenDead(reason: "80100000 illegal token", since: nil) : .accepted(id: answer?.requestId)
        case ("80300007", _):
            return .tokenDead(reason: "80300007", since: nil)
        case ("80200001", _), ("80200003", _), (_, 401):
            return .refreshCredentials(reason: code.isEmpty ? "HTTP 401" : code)
        case ("80600003", _), ("81000001", _):
            return .retry(reason: code, after: after, cause: .unavailable)
        case (_, 503):
            return .retry(reason: "HTTP 503 traffic control", after: after, cause: .unavailable)
        case (_, 429), (_, 500), (_, 502), (_, 504):
            return .retry(reason: "HTTP \(status)", after: after, cause: status == 429 ? .throttled : .unavailable)
        default:
            let reason = code.isEmpty ? "HTTP \(status)" : code
            return .failed(reason: message.isEmpty ? reason : "\(reason): \(message.prefix(200))")
        }
    }

    /// The tokens an 80100000 answer's `msg` names as illegal: `illegal_tokens` (API v1) or,
    /// in later versions, every list under `illegalTokens`.
    static func illegalTokens(in message: String) -> Set<String> {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(message.utf8))) as? [String: Any] else { return [] }
        var tokens = Set(object["illegal_tokens"] as? [String] ?? [])
        if let grouped = object["illegalTokens"] as? [String: Any] {
            for case let list as [String] in grouped.values { tokens.formUnion(list) }
        }
        return tokens
    }

    private struct Answer: Decodable {
        var code: String?
        var msg: String?
        var requestId: String?
    }
}
