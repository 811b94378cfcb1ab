import Foundation
import OutboundHTTP
import PigeonCore
import PushCore
import PushTransport

/// The APNs and FCM transports a configuration asks for, each on its own HTTP/2 client.
struct PushTransports {
    var apns: APNsTransport?
    var fcm: FCMTransport?
    /// Each client with the service it serves (`apns`, `fcm`), for metrics and shutdown.
    var clients: [(service: String, client: HTTP2Client)] = []

    init(configuration: GatewayConfiguration, logger: Logger, metrics: MetricsRegistry) throws {
        var configured = false
        defer {
            // A client made before a later step failed (a bad FCM account after APNs) is stopped.
            if !configured { clients.forEach { $0.client.shutdown(abandonRunning: true) } }
        }
        let apnsSettings = configuration.apns
        // Enough streams per connection for the engine's concurrency, within what servers allow.
        let streams = min(1000, max(100, configuration.delivery.concurrency / configuration.delivery.connections + 1))
        func client(certificate: HTTP2Client.ClientCertificate? = nil) throws -> HTTP2Client {
            try HTTP2Client(configuration: .init(
                maxConnections: configuration.delivery.connections, maxStreamsPerConnection: streams,
                caFile: configuration.tlsCaFile, clientCertificate: certificate))
        }
        if let keyPath = apnsSettings.keyPath, let keyId = apnsSettings.keyId, let teamId = apnsSettings.teamId {
            let http = try client()
            clients.append(("apns", http))
            let credentials = try APNsSigningCredentials(p8PEM: try String(contentsOfFile: keyPath, encoding: .utf8), keyId: keyId, teamId: teamId)
            apns = APNsTransport(client: http, endpoint: apnsSettings.resolvedEndpoint, topic: apnsSettings.topic, authentication: .token(credentials),
                                 onTokenEvent: { Self.report($0, keyId: keyId, logger: logger, metrics: metrics) })
        } else if let certificate = apnsSettings.certificatePath {
            let http = try client(certificate: .init(path: certificate, password: apnsSettings.password))
            clients.append(("apns", http))
            apns = APNsTransport(client: http, endpoint: apnsSettings.resolvedEndpoint, topic: apnsSettings.topic, authentication: .certificate)
        }
        if let accountPath = configuration.fcm.serviceAccountPath {
            let http = try client()
            clients.append(("fcm", http))
            let account = try ServiceAccount(json: try Data(contentsOf: URL(fileURLWithPath: accountPath)))
            let tokens = FCMAccessTokens(account: account, tokenURL: configuration.fcm.tokenEndpoint, client: http)
            fcm = FCMTransport(client: http, endpoint: configuration.fcm.endpoint ?? "https://fcm.googleapis.com", projectId: account.projectId, tokens: tokens)
        }
        configured = true
    }

    /// Every provider-token event is counted; the ones an operator acts on are logged, once each
    /// (a refusal is logged when it leads to a new token, not for each push it refused).
    private static func report(_ event: APNsTransport.ProviderTokenEvent, keyId: String, logger: Logger, metrics: MetricsRegistry) {
        switch event {
        case .signed(let reason):
            metrics.increment("pigeon_apns_provider_tokens_signed_total", labels: ["reason": reason.rawValue])
            if reason == .rejected {
                logger.warning("APNs refused the provider token: a new one was signed", metadata: ["keyId": keyId])
            }
        case .rejected(let reason, _):
            metrics.increment("pigeon_apns_provider_token_rejections_total", labels: ["reason": reason])
        case .throttled(let until):
            metrics.increment("pigeon_apns_provider_token_throttled_total")
            logger.warning("APNs answered TooManyProviderTokenUpdates: no new provider token before the back-off ends",
                           metadata: ["keyId": keyId, "until": ISO8601DateFormatter().string(from: until)])
        }
    }
}
