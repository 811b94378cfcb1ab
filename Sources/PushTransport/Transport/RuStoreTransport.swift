import Foundation
import OutboundHTTP
import PushCore

/// RuStore push as a ``PushService``: the project's static service token (`Authorization:
/// Bearer`, made in the RuStore console; nothing to refresh). A push refused for that token is
/// retried later and its device kept; each refusal is reported through `onCredentialsRefused` so
/// the operator hears of it.
public struct RuStoreService: BearerTokenService {
    public let endpoint: String
    public let builder: RuStoreRequestBuilder
    private let serviceToken: String
    private let onCredentialsRefused: @Sendable (String) -> Void

    public init(endpoint: String = "https://vkpns.rustore.ru", projectId: String, serviceToken: String,
                onCredentialsRefused: @escaping @Sendable (String) -> Void = { _ in }) {
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = RuStoreRequestBuilder(projectId: projectId)
        self.serviceToken = serviceToken
        self.onCredentialsRefused = onCredentialsRefused
    }

    public func prepare(_ message: PushMessage, now: Date) throws(PushMessageError) -> FCMPreparedMessage {
        try builder.prepare(message, now: now)
    }

    public func credential() async -> Result<String, CredentialUnavailable> { .success(serviceToken) }

    /// A static token is never replaced: refused pushes come back as retries.
    public func replace(_ refused: String) async -> Bool { false }

    public func classify(_ response: HTTP2Client.Response, token: String, now: Date) -> PushOutcome {
        let outcome = RuStoreResponse.classify(status: response.status, body: response.body, retryAfter: response.headers["retry-after"], now: now)
        if case .retry(let reason, _, .credentials) = outcome { onCredentialsRefused(reason) }
        return outcome
    }
}

/// Sends pushes to RuStore push.
public typealias RuStoreTransport = ServiceTransport<RuStoreService>
