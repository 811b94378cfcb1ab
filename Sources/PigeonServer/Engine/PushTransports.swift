import Foundation
import PushTransport

/// The APNs and FCM transports a configuration asks for, each on its own HTTP/2 client.
struct PushTransports {
    var apns: APNsTransport?
    var fcm: FCMTransport?
    var clients: [HTTP2Client] = []

    init(configuration: GatewayConfiguration) throws {
        let apnsSettings = configuration.apns
        if let keyPath = apnsSettings.keyPath, let keyId = apnsSettings.keyId, let teamId = apnsSettings.teamId {
            let client = try HTTP2Client(configuration: .init(caFile: configuration.tlsCaFile))
            clients.append(client)
            let credentials = try APNsSigningCredentials(p8PEM: try String(contentsOfFile: keyPath, encoding: .utf8), keyId: keyId, teamId: teamId)
            apns = APNsTransport(client: client, endpoint: apnsSettings.resolvedEndpoint, topic: apnsSettings.topic, authentication: .token(credentials))
        } else if let certificate = apnsSettings.certificatePath {
            let client = try HTTP2Client(configuration: .init(caFile: configuration.tlsCaFile, clientCertificate: (certificate, apnsSettings.password)))
            clients.append(client)
            apns = APNsTransport(client: client, endpoint: apnsSettings.resolvedEndpoint, topic: apnsSettings.topic, authentication: .certificate)
        }
        if let accountPath = configuration.fcm.serviceAccountPath {
            let client = try HTTP2Client(configuration: .init(caFile: configuration.tlsCaFile))
            clients.append(client)
            let account = try ServiceAccount(json: try Data(contentsOf: URL(fileURLWithPath: accountPath)))
            let tokens = FCMAccessTokens(account: account, tokenURL: configuration.fcm.tokenEndpoint, client: client)
            fcm = FCMTransport(client: client, endpoint: configuration.fcm.endpoint ?? "https://fcm.googleapis.com", projectId: account.projectId, tokens: tokens)
        }
    }
}
