import Foundation

/// Turns an APNs HTTP/2 response into a ``PushOutcome``, following Apple's documented status
/// codes and reasons ("Handling notification responses from APNs").
package enum APNsResponse {
    /// Reasons that mean the device token is unusable for this app: the device is removed.
    package static let deadTokenReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered", "ExpiredToken"]

    /// Reasons that the key itself is not allowed here (keys restricted to an environment or to
    /// topics, since February 2025): no fresh token helps and the device is fine — the app's
    /// configuration must change. Apple has spelled the environment one both ways.
    package static let keyRestrictionReasons: Set<String> = ["UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken", "BadEnvironmentKeyInToken"]

    /// What follows Apple's reason in a key restriction's failure.
    private static let keyRestrictionSuffix = ": the APNs key is not allowed for this app's topic or environment"

    /// Apple's reason when `outcome` is a key restriction (``classify(status:body:apnsId:retryAfter:now:)``
    /// made it), else nil: the one place that reads it back.
    package static func keyRestriction(_ outcome: PushOutcome) -> String? {
        guard case .failed(let reason) = outcome, reason.hasSuffix(keyRestrictionSuffix) else { return nil }
        let apple = String(reason.dropLast(keyRestrictionSuffix.count))
        return keyRestrictionReasons.contains(apple) ? apple : nil
    }

    /// Provider-token reasons that a fresh JWT fixes.
    package static let credentialReasons: Set<String> = ["ExpiredProviderToken", "InvalidProviderToken", "MissingProviderToken"]

    /// `status` and `body` of the response, and its `apns-id` and `retry-after` headers.
    package static func classify(status: Int, body: Data, apnsId: String?, retryAfter: String? = nil, now: Date = Date()) -> PushOutcome {
        if status == 200 { return .accepted(id: apnsId) }
        let error = try? JSONDecoder().decode(ErrorBody.self, from: body)
        let reason = error?.reason ?? "HTTP \(status)"
        let since = error?.timestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        switch status {
        case 410:
            return .tokenDead(reason: reason, since: since)
        case 400 where deadTokenReasons.contains(reason):
            return .tokenDead(reason: reason, since: nil)
        case 403 where credentialReasons.contains(reason):
            return .refreshCredentials(reason: reason)
        case 403 where keyRestrictionReasons.contains(reason):
            return .failed(reason: reason + keyRestrictionSuffix)
        case 429, 500, 502, 503, 504:
            // TooManyRequests, TooManyProviderTokenUpdates, InternalServerError,
            // ServiceUnavailable, Shutdown: all pass with time.
            return .retry(reason: reason, after: RetryAfter.parse(retryAfter, now: now), cause: .ofServiceReason(reason))
        default:
            // 400 (bad headers or payload), 403 (certificate or topic), 405, 413 PayloadTooLarge.
            return .failed(reason: reason)
        }
    }

    private struct ErrorBody: Decodable {
        var reason: String?
        var timestamp: Int64?
    }
}
