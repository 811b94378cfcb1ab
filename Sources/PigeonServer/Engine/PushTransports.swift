import Foundation
import OutboundHTTP
import PushTransport

/// The APNs and FCM transports a configuration asks for, each on its own HTTP/2 client.
struct PushTransports {
    var apns: APNsTransport?
    var fcm: FCMTransport?
    /// Each client with the service it serves (`apns`, `fcm`), for metrics and shutdown.
    var clients: [(service: String, client: HTTP2Client)] = []

    init(configuration: GatewayConfiguration) throws {
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
            apns = APNsTransport(client: http, endpoint: apnsSettings.resolvedEndpoint, topic: apnsSettings.topic, authentication: .token(credentials))
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
    }
}
