import Foundation
import OutboundHTTP
import PushCore

/// RuStore push as a ``PushService``: the project's static service token (`Authorization:
/// Bearer`, made in the RuStore console; nothing to refresh). A push refused for that token is
/// retried later and its device kept; each refusal is reported through `onCredentialsRefused` so
/// the operator hears of it.
package struct RuStoreService: BearerTokenService {
    package let endpoint: String
    package let builder: RuStoreRequestBuilder
    private let serviceToken: String
    private let onCredentialsRefused: @Sendable (String) -> Void

    package init(endpoint: String = "https://vkpns.rustore.ru", projectId: String, serviceToken: String,
                onCredentialsRefused: @escaping @Sendable (String) -> Void = { _ in }) {
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = RuStoreRequestBuilder(projectId: projectId)
        self.serviceToken = serviceToken
        self.onCredentialsRefused = onCredentialsRefused
    }

    package func prepare(_ message: PushMessage, now: Date) throws(PushMessageError) -> FCMPreparedMessage {
        try builder.prepare(message, now: now)
    }

    package func credential() async -> Result<String, CredentialUnavailable> { .success(serviceToken) }

    /// A static token is never replaced: refused pushes come back as retries.
    package func replace(_ refused: String) async -> Bool { false }

    package func classify(_ response: HTTP2Client.Response, token: String, now: Date) -> PushOutcome {
        let outcome = RuStoreResponse.classify(status: response.status, body: response.body, retryAfter: response.headers["retry-after"], now: now)
        if case .retry(let reason, _, .credentials) = outcome { onCredentialsRefused(reason) }
        return outcome
    }
}

/// Sends pushes to RuStore push.
package typealias RuStoreTransport = ServiceTransport<RuStoreService>
