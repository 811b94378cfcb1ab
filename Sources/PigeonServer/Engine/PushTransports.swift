import Foundation
import OutboundHTTP
import PigeonConfiguration
import PigeonCore
import PigeonDomain
import PigeonCrypto
import PigeonDelivery
import PushCore
import PushTransport

/// The push transports a configuration asks for: per app, an HTTP/2 client per service (its own
/// credentials, its own connections), and a sender per route — APNs has one for production
/// tokens and one for sandbox tokens, sharing the client and the provider token.
struct PushTransports {
    /// The sender of each route.
    var senders: [PushRoute: any PushSending] = [:]
    /// The urgent lane's sender of each route: the same service and credentials over a client
    /// of its own (its own connection), so a blast filling every stream of the other client
    /// never holds up a one-time code.
    var urgentSenders: [PushRoute: any PushSending] = [:]
    /// Each client with the service (`apns`, `fcm`) and app it serves, for metrics and shutdown.
    var clients: [(service: String, app: String, client: HTTP2Client)] = []
    /// The default app's APNs transport when it signs with a `.p8` key: Wallet pass pushes of
    /// pass types without a certificate of their own go through it (``PassPushers``), on its
    /// connections and with its provider token — one token per key, as Apple counts them.
    var defaultAppKeyTransport: APNsTransport?
    /// Per iOS route, APNs on the urgent lane's connection with the app's topic, for Live
    /// Activity events and widget refreshes (CONTRACT §9): they are seconds-relevant, and a
    /// blast must not hold them up.
    var activityAPNs: [PushRoute: (transport: APNsTransport, topic: String)] = [:]
    /// Per app, APNs for broadcast channels: the production transport and the channel
    /// management API's base URL.
    var channelAPNs: [ActivityChannels.App] = []

    init(configuration: GatewayConfiguration, logger: Logger, metrics: MetricsRegistry) throws {
        var configured = false
        defer {
            // A client made before a later step failed (a bad FCM account after APNs) is stopped.
            if !configured { clients.forEach { $0.client.shutdown(abandonRunning: true) } }
        }
        for (appId, app) in configuration.pushApps {
            try add(app, appId: appId, configuration: configuration, logger: logger, metrics: metrics)
        }
        configured = true
    }

    private mutating func add(_ app: GatewayConfiguration.PushApp, appId: String, configuration: GatewayConfiguration,
                              logger: Logger, metrics: MetricsRegistry) throws {
        let label = PushRoute(platform: .ios, appId: appId).appLabel
        // Each service's pushes are spread over `pushThreads` clients (a thread and connections
        // each); the service's connections are shared out between them, one at least each.
        let threads = configuration.delivery.pushThreads
        func threadClients(_ service: String, certificate: HTTP2Client.ClientCertificate? = nil,
                           connections: Int = configuration.delivery.connections) throws -> [HTTP2Client] {
            let connectionsPerThread = max(1, connections / threads)
            // Enough streams per connection for the engine's concurrency, within what servers allow.
            let streams = min(1000, max(100, configuration.delivery.concurrency / (connectionsPerThread * threads) + 1))
            return try (0..<threads).map { thread in
                // A service and app has `deliveryConcurrency` pushes in flight at most, shared out
                // between its clients: its own budget, which a failing service cannot take from another.
                let http = try HTTP2Client(configuration: .init(
                    maxConnections: connectionsPerThread, maxStreamsPerConnection: streams,
                    caFile: configuration.tlsCaFile, clientCertificate: certificate,
                    threadName: threads == 1 ? "\(service)-\(label)" : "\(service)\(thread)-\(label)",
                    maxInFlight: (configuration.delivery.concurrency + threads - 1) / threads))
                clients.append((service, label, http))
                return http
            }
        }
        // The urgent lane's client of a service: one connection with room for the lane's window.
        func urgentClient(_ service: String, certificate: HTTP2Client.ClientCertificate? = nil) throws -> HTTP2Client {
            let http = try HTTP2Client(configuration: .init(
                maxConnections: 1, maxStreamsPerConnection: 100,
                caFile: configuration.tlsCaFile, clientCertificate: certificate, threadName: "\(service)-urgent"))
            clients.append(("\(service)-urgent", label, http))
            return http
        }
        // A route's sender: the service over every thread's client, and over the urgent client;
        // with a quota, both lanes behind it.
        func register(_ route: PushRoute, _ transports: [any PushSending], urgent: any PushSending, quota: QuotaGate? = nil) {
            let bulk: any PushSending = transports.count == 1 ? transports[0] : SpreadPushSender(transports)
            senders[route] = quota.map { QuotaSender(bulk, gate: $0, urgent: false) } ?? bulk
            urgentSenders[route] = quota.map { QuotaSender(urgent, gate: $0, urgent: true) } ?? urgent
        }
        let settings = app.apns
        let apnsConnections = configuration.delivery.apnsConnections ?? configuration.delivery.connections
        var apns: [APNsTransport] = []
        var urgentAPNs: APNsTransport?
        if let keyPath = settings.keyPath, let keyId = settings.keyId, let teamId = settings.teamId {
            let credentials = try APNsSigningCredentials(p8PEM: try String(contentsOfFile: keyPath, encoding: .utf8), keyId: keyId, teamId: teamId)
            let http = try threadClients("apns", connections: apnsConnections)
            let transport = APNsTransport(client: http[0], endpoint: settings.resolvedEndpoint, topic: settings.topic,
                                          authentication: .token(credentials),
                                          onTokenEvent: { [keyRestrictionLog = LogThrottle(interval: 60)] in
                                              Self.report($0, keyId: keyId, app: label, logger: logger, metrics: metrics, keyRestrictionLog: keyRestrictionLog)
                                          })
            // Every client of the key shares its one provider token.
            apns = [transport] + http.dropFirst().map(transport.using)
            urgentAPNs = transport.using(try urgentClient("apns"))
            if appId == PushRoute.defaultApp { defaultAppKeyTransport = transport }
        } else if let certificate = settings.certificatePath {
            let identity = HTTP2Client.ClientCertificate(path: certificate, password: settings.password)
            let http = try threadClients("apns", certificate: identity, connections: apnsConnections)
            let transport = APNsTransport(client: http[0], endpoint: settings.resolvedEndpoint, topic: settings.topic, authentication: .certificate)
            apns = [transport] + http.dropFirst().map(transport.using)
            urgentAPNs = transport.using(try urgentClient("apns", certificate: identity))
        }
        if let urgentAPNs {
            let sandbox = settings.resolvedSandboxEndpoint
            if let topic = settings.topic {
                activityAPNs[PushRoute(platform: .ios, appId: appId, environment: .production)] = (urgentAPNs, topic)
                activityAPNs[PushRoute(platform: .ios, appId: appId, environment: .sandbox)] = (urgentAPNs.sending(to: sandbox), topic)
                channelAPNs.append(.init(appId: appId, transport: urgentAPNs, channelEndpoint: settings.resolvedChannelEndpoint, bundleId: topic))
            }
            register(PushRoute(platform: .ios, appId: appId, environment: .production), apns, urgent: urgentAPNs)
            register(PushRoute(platform: .ios, appId: appId, environment: .sandbox), apns.map { $0.sending(to: sandbox) },
                     urgent: urgentAPNs.sending(to: sandbox))
        }
        if let project = app.rustore.projectId, let serviceToken = app.rustore.serviceToken {
            let refusals = LogThrottle(interval: 60)
            let http = try threadClients("rustore")
            let transport = RuStoreTransport(client: http[0], service: RuStoreService(
                endpoint: app.rustore.resolvedEndpoint, projectId: project, serviceToken: serviceToken,
                onCredentialsRefused: { reason in
                    metrics.increment(Metric.pushCredentialsRefusedTotal, labels: ["service": "rustore", "app": label])
                    if let suppressed = refusals.admit() {
                        logger.error("RuStore refused the service token: check rustoreServiceToken; pushes are kept and retried",
                                     metadata: ["app": label, "project": project, "reason": reason, "suppressedSinceLast": String(suppressed)])
                    }
                }))
            register(PushRoute(platform: .rustore, appId: appId), [transport] + http.dropFirst().map(transport.using),
                     urgent: transport.using(try urgentClient("rustore")))
        }
        if let hmsAppId = app.huawei.appId, let secret = app.huawei.clientSecret {
            let http = try threadClients("huawei")
            let tokens = OAuthAccessTokens(clientId: hmsAppId, clientSecret: secret, tokenURL: app.huawei.resolvedTokenEndpoint, client: http[0])
            let transport = HuaweiTransport(
                client: http[0], service: HuaweiService(endpoint: app.huawei.resolvedEndpoint, appId: hmsAppId,
                                                        categories: HuaweiCategories(codes: app.huawei.codesCategory, byType: app.huawei.categoriesByType),
                                                        tokens: tokens))
            register(PushRoute(platform: .huawei, appId: appId), [transport] + http.dropFirst().map(transport.using),
                     urgent: transport.using(try urgentClient("huawei")))
        }
        if let keyPath = app.webPush.vapidPrivateKeyPath, let subject = app.webPush.vapidSubject {
            let vapid = try VAPIDSigner(key: PrivateKey(pem: String(contentsOfFile: keyPath, encoding: .utf8)), subject: subject)
            let http = try threadClients("webpush")
            let web = app.webPush
            let declarative = web.declarativeNavigate.flatMap { navigate -> WebPushService.Declarative? in
                guard let scope = WebPushService.Declarative.Scope(rawValue: web.declarativeScope) else { return nil }
                return WebPushService.Declarative(scope: scope, appleHosts: web.appleHosts, title: web.declarativeTitle, navigate: navigate)
            }
            let transport = WebPushTransport(client: http[0], service: WebPushService(vapid: vapid, allowedHosts: web.allowedHosts, declarative: declarative))
            register(PushRoute(platform: .web, appId: appId), [transport] + http.dropFirst().map(transport.using),
                     urgent: transport.using(try urgentClient("webpush")))
        }
        if let accountPath = app.fcm.serviceAccountPath {
            let http = try threadClients("fcm")
            let account = try ServiceAccount(json: try Data(contentsOf: URL(fileURLWithPath: accountPath)))
            let tokens = FCMAccessTokens(account: account, tokenURL: app.fcm.tokenEndpoint, client: http[0])
            let transport = FCMTransport(
                client: http[0], endpoint: app.fcm.endpoint ?? "https://fcm.googleapis.com", projectId: account.projectId, tokens: tokens)
            // One quota per project, shared by both lanes: a blast cannot burn what a code needs.
            register(PushRoute(platform: .android, appId: appId), [transport] + http.dropFirst().map(transport.using),
                     urgent: transport.using(try urgentClient("fcm")), quota: QuotaGate(perMinute: app.fcm.messagesPerMinute))
        }
    }

    /// Every provider-token event is counted; the ones an operator acts on are logged, once each
    /// (a refusal is logged when it leads to a new token, not for each push it refused).
    private static func report(_ event: APNsTransport.ProviderTokenEvent, keyId: String, app: String, logger: Logger, metrics: MetricsRegistry,
                               keyRestrictionLog: LogThrottle) {
        switch event {
        case .signed(let reason):
            metrics.increment(Metric.apnsProviderTokensSignedTotal, labels: ["reason": reason.rawValue])
            if reason == .rejected {
                logger.warning("APNs refused the provider token: a new one was signed", metadata: ["keyId": keyId, "app": app])
            }
        case .rejected(let reason, _):
            metrics.increment(Metric.apnsProviderTokenRejectionsTotal, labels: ["reason": reason])
        case .throttled(let until):
            metrics.increment(Metric.apnsProviderTokenThrottledTotal)
            logger.warning("APNs answered TooManyProviderTokenUpdates: no new provider token before the back-off ends",
                           metadata: ["keyId": keyId, "app": app, "until": ISO8601DateFormatter().string(from: until)])
        case .keyRestricted(let reason):
            metrics.increment(Metric.apnsKeyRestrictionsTotal, labels: ["app": app, "reason": reason])
            if let suppressed = keyRestrictionLog.admit() {
                logger.error("APNs refused this app's key for its topic or environment: fix the app's APNs key or environment (devices are kept; no new provider token is signed)",
                             metadata: ["keyId": keyId, "app": app, "reason": reason, "suppressedSinceLast": String(suppressed)])
            }
        }
    }
}
