import Foundation
import OutboundHTTP
import PushCore

/// FCM HTTP v1 as a ``PushService``: access tokens from ``OAuthAccessTokens``; a 401 drops the
/// cached token and the refused pushes go once more with a new one.
package struct FCMService: OAuthTokenService {
    package let endpoint: String
    package let builder: FCMRequestBuilder
    package let tokens: OAuthAccessTokens

    package init(endpoint: String = "https://fcm.googleapis.com", projectId: String, tokens: OAuthAccessTokens) {
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = FCMRequestBuilder(projectId: projectId)
        self.tokens = tokens
    }

    package func prepare(_ message: PushMessage, now: Date) throws(PushMessageError) -> FCMPreparedMessage {
        try builder.prepare(message, now: now)
    }

    package func classify(_ response: HTTP2Client.Response, token: String, now: Date) -> PushOutcome {
        FCMResponse.classify(status: response.status, body: response.body, retryAfter: response.headers["retry-after"], now: now)
    }
}

/// Sends pushes to FCM HTTP v1.
package typealias FCMTransport = ServiceTransport<FCMService>

extension ServiceTransport where Service == FCMService {
    package convenience init(client: HTTP2Client, endpoint: String = "https://fcm.googleapis.com", projectId: String, tokens: OAuthAccessTokens,
                            clock: @escaping @Sendable () -> Date = Date.init) {
        self.init(client: client, service: FCMService(endpoint: endpoint, projectId: projectId, tokens: tokens), clock: clock)
    }
}
