import Foundation
import OutboundHTTP
import PigeonConfiguration
import PigeonCore
import PigeonDelivery
import PushCore
import PushTransport

/// APNs for Wallet pass update pushes (CONTRACT §7), to the production host (`apnsEndpoint` when
/// set): each pass type with its own Pass Type ID certificate
/// (`passType.<id>.certificatePath`) on a connection of its own, any other with the default
/// app's `.p8` key through that app's transport (its connections and provider token: a key has
/// one token, whatever the topic).
struct PassPushers: PassPushing {
    /// Pushes in flight per pass type at once.
    static let maxInFlight = 200

    private let byCertificate: [String: APNsTransport]
    private let byKey: APNsTransport?
    /// The certificate clients made here (by pass type), for metrics and shutdown.
    let clients: [(service: String, app: String, client: HTTP2Client)]

    /// `keyTransport`: the default app's APNs transport when it signs with a `.p8` key
    /// (``PushTransports/defaultAppKeyTransport``), sent to the production host from here.
    init(configuration: GatewayConfiguration, keyTransport: APNsTransport?) throws {
        let endpoint = configuration.apns.endpoint ?? "https://api.push.apple.com"
        var clients: [(service: String, app: String, client: HTTP2Client)] = []
        var configured = false
        defer { if !configured { clients.forEach { $0.client.shutdown(abandonRunning: true) } } }
        var byCertificate: [String: APNsTransport] = [:]
        for (identifier, certificate) in configuration.passes.certificates {
            guard let path = certificate.path else { continue }
            let http = try HTTP2Client(configuration: .init(
                maxConnections: 1, maxStreamsPerConnection: Self.maxInFlight, caFile: configuration.tlsCaFile,
                clientCertificate: .init(path: path, password: certificate.password), threadName: "apns-passes"))
            clients.append(("apns_passes", identifier, http))
            byCertificate[identifier] = APNsTransport(client: http, endpoint: endpoint, topic: identifier, authentication: .certificate)
        }
        self.byCertificate = byCertificate
        byKey = keyTransport?.sending(to: endpoint)
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
