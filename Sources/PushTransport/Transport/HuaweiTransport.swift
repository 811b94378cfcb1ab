import Foundation
import OutboundHTTP
import PushCore

/// Huawei Push Kit as a ``PushService``: one token per request, access tokens from
/// ``OAuthAccessTokens`` (client credentials). An expired or refused access token (80200003,
/// 80200001, HTTP 401) is dropped and the refused pushes go once more with a new one.
package struct HuaweiService: OAuthTokenService {
    package let endpoint: String
    package let builder: HuaweiRequestBuilder
    package let tokens: OAuthAccessTokens

    package init(endpoint: String = "https://push-api.cloud.huawei.com", appId: String, categories: HuaweiCategories = HuaweiCategories(), tokens: OAuthAccessTokens) {
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = HuaweiRequestBuilder(appId: appId, categories: categories)
        self.tokens = tokens
    }

    package func prepare(_ message: PushMessage, now: Date) throws(PushMessageError) -> FCMPreparedMessage {
        try builder.prepare(message, now: now)
    }

    package func classify(_ response: HTTP2Client.Response, token: String, now: Date) -> PushOutcome {
        HuaweiResponse.classify(status: response.status, body: response.body, token: token, retryAfter: response.headers["retry-after"], now: now)
    }
}

/// Sends pushes to Huawei Push Kit.
package typealias HuaweiTransport = ServiceTransport<HuaweiService>
