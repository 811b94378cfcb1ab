import Foundation
import OutboundHTTP
import PigeonCore
import PigeonDelivery
import PushCore
import PushTransport

/// APNs for Wallet pass update pushes (CONTRACT §7), to the production host (`apnsEndpoint` when
/// set): each pass type with its own Pass Type ID certificate
/// (`passType.<id>.certificatePath`), any other with the default app's `.p8` key when one is
/// configured (one provider token for every topic of the team).
struct PassPushers: PassPushing {
    /// Pushes in flight per pass type at once.
    static let maxInFlight = 200

    private let byCertificate: [String: APNsTransport]
    private let byKey: APNsTransport?
    /// Each client made, for metrics and shutdown.
    let clients: [(service: String, app: String, client: HTTP2Client)]

    init(configuration: GatewayConfiguration, logger: Logger, metrics: MetricsRegistry) throws {
        let endpoint = configuration.apns.endpoint ?? "https://api.push.apple.com"
        var clients: [(service: String, app: String, client: HTTP2Client)] = []
        var configured = false
        defer { if !configured { clients.forEach { $0.client.shutdown(abandonRunning: true) } } }
        func client(_ certificate: HTTP2Client.ClientCertificate?) throws -> HTTP2Client {
            let http = try HTTP2Client(configuration: .init(
                maxConnections: 1, maxStreamsPerConnection: Self.maxInFlight, caFile: configuration.tlsCaFile,
                clientCertificate: certificate, threadName: "apns-passes"))
            clients.append(("apns_passes", "wallet", http))
            return http
        }
        var byCertificate: [String: APNsTransport] = [:]
        for (identifier, certificate) in configuration.passes.certificates {
            guard let path = certificate.path else { continue }
            byCertificate[identifier] = APNsTransport(
                client: try client(.init(path: path, password: certificate.password)), endpoint: endpoint, topic: identifier,
                authentication: .certificate)
        }
        let apns = configuration.apns
        if let keyPath = apns.keyPath, let keyId = apns.keyId, let teamId = apns.teamId {
            let credentials = try APNsSigningCredentials(p8PEM: try String(contentsOfFile: keyPath, encoding: .utf8), keyId: keyId, teamId: teamId)
            byKey = APNsTransport(client: try client(nil), endpoint: endpoint, topic: nil, authentication: .token(credentials))
        } else {
            byKey = nil
        }
        self.byCertificate = byCertificate
        self.clients = clients
        configured = true
    }

    /// Whether any pass type can be pushed to.
    var isConfigured: Bool { !byCertificate.isEmpty || byKey != nil }

    func pushUpdates(passTypeIdentifier: String, tokens: [String]) async -> [PushOutcome] {
        guard let transport = byCertificate[passTypeIdentifier] ?? byKey else {
            let reason = "no APNs credentials for pass type \(passTypeIdentifier): set passType.\(passTypeIdentifier).certificatePath or apnsKeyPath"
            return tokens.map { _ in .failed(reason: reason) }
        }
        return await transport.sendPassUpdates(passTypeIdentifier: passTypeIdentifier, tokens: tokens, maxInFlight: Self.maxInFlight)
    }
}
