import Foundation
import PigeonCore
import PigeonDomain

/// Everything an operator sets in `server.conf` (CONTRACT §4–§5), with defaults.
public struct GatewayConfiguration: Sendable {
    /// The listeners (CONTRACT §5): `listen` faces phones, `bankListen` the bank and operators.
    public struct HTTP: Sendable {
        /// `listen`: address and port of the public listener, default `127.0.0.1:8080`.
        public var host = "127.0.0.1"
        public var port: UInt16 = 8080
        /// `tlsCertificatePath`/`tlsKeyPath`: PEM files; both set makes `listen` HTTPS.
        public var tlsCertificatePath: String?
        public var tlsKeyPath: String?
        /// `bankListen`: address and port of the bank-facing listener; nil serves everything on
        /// `listen`.
        public var bankAddress: (host: String, port: UInt16)?
        /// `bankTlsCertificatePath`/`bankTlsKeyPath`: both set makes `bankListen` HTTPS.
        public var bankTlsCertificatePath: String?
        public var bankTlsKeyPath: String?
        /// `bankClientCaFile`: on `bankListen`, only clients presenting a certificate signed by
        /// this CA are served.
        public var bankClientCaFile: String?
        /// `soapUsername`/`soapPassword`: HTTP Basic credentials required on the SOAP endpoint.
        public var soapUsername: String?
        public var soapPassword: String?
        /// `soapAuthentication = none` allows an unauthenticated SOAP service on a non-loopback
        /// address (with a warning); otherwise such a configuration does not start.
        public var soapAuthenticationDisabled = false
        /// `maxRequestBytes`: SOAP bodies beyond this get 413 (read only after the credentials
        /// were checked). Default 1 MiB.
        public var maxRequestBytes = 1 << 20
        /// `httpConnectionLimit`: connections open at once on `listen` (each costs a file
        /// descriptor and a few KiB, no thread). Default 16,384.
        public var connectionLimit = 16_384
        /// `bankConnectionLimit`: connections open at once on `bankListen`. Default 512.
        public var bankConnectionLimit = 512
        /// `bankPerAddressConnectionLimit`: connections from one client address on `bankListen`;
        /// 0 for none. Default 128.
        public var bankPerAddressConnectionLimit = 128
        /// `bankUnauthenticatedConnectionLimit`: connections on `bankListen` from one client
        /// address that have not yet sent a head that passed the checks (a verified client
        /// certificate with `bankClientCaFile`): at most this many at once, each cut 5 s after it
        /// opened; all addresses together at most half of `bankConnectionLimit`, so the bank's
        /// authenticated connections always keep the other half. Default 16.
        public var bankUnauthenticatedConnectionLimit = 16
        /// `perAddressConnectionLimit`: connections from one client address on `listen`; 0 for
        /// none (behind a reverse proxy every client has the proxy's address). Default 256.
        public var perAddressConnectionLimit = 256
        /// `httpIdleTimeoutSeconds`: a connection on which nothing moves this long is closed. Default 30.
        public var idleTimeoutSeconds = 30
        /// `requestDeadlineSeconds`: a whole request (head and body) must arrive within this of
        /// the server starting to wait for it; idle keep-alive connections close then too. Default 30.
        public var requestDeadlineSeconds = 30

        /// The bank-facing listener, when `bankListen` is set.
        public var bank: BankListener? {
            bankAddress.map {
                BankListener(host: $0.host, port: $0.port, tlsCertificatePath: bankTlsCertificatePath,
                             tlsKeyPath: bankTlsKeyPath, clientCaFile: bankClientCaFile)
            }
        }

        /// Whether the SOAP service would be served without any client authentication.
        public var soapIsUnauthenticated: Bool {
            soapUsername == nil && bank?.clientCaFile == nil
        }

        /// The address the SOAP service is reachable on.
        public var soapHost: String { bank?.host ?? host }
    }

    /// The bank-facing listener.
    public struct BankListener: Sendable {
        public var host: String
        public var port: UInt16
        public var tlsCertificatePath: String?
        public var tlsKeyPath: String?
        public var clientCaFile: String?
    }

    /// The PostgreSQL database.
    public struct Database: Sendable {
        /// `dbUrl`: a libpq URI or `jdbc:postgresql://…`.
        public var url: String?
        /// `dbUsername`/`dbPassword`: fill what the URL lacks.
        public var username: String?
        public var password: String?
        /// `dbPoolSize`: connections. Default 8.
        public var poolSize = 8
        /// `dbStatementTimeoutMillis`: per statement. Default 30 000.
        public var statementTimeoutMilliseconds = 30_000
        /// `migrationsPath`: the folder of SQL migrations; found next to the binary if unset.
        public var migrationsPath: String?
    }

    /// Apple Push Notification service.
    public struct APNs: Sendable {
        public var certificatePath: String?
        public var password: String?
        public var isProduction = false
        /// `apnsEndpoint`: base URL; defaults by ``isProduction``.
        public var endpoint: String?
        /// `apnsSandboxEndpoint`: base URL for devices registered with `environment = sandbox`;
        /// Apple's sandbox host by default.
        public var sandboxEndpoint: String?
        /// `apnsChannelEndpoint`: base URL of Apple's broadcast channel management API
        /// (CONTRACT §9); defaults by ``isProduction`` (port 2196, sandbox 2195).
        public var channelEndpoint: String?
        public var topic: String?
        public var keyPath: String?
        public var keyId: String?
        public var teamId: String?

        /// The base URL pushes go to.
        public var resolvedEndpoint: String {
            endpoint ?? (isProduction ? "https://api.push.apple.com" : "https://api.sandbox.push.apple.com")
        }

        /// The base URL pushes to sandbox tokens go to.
        public var resolvedSandboxEndpoint: String {
            sandboxEndpoint ?? "https://api.sandbox.push.apple.com"
        }

        /// The base URL of the channel management API.
        public var resolvedChannelEndpoint: String {
            channelEndpoint ?? (isProduction ? "https://api-manage-broadcast.push.apple.com:2196"
                : "https://api-manage-broadcast.sandbox.push.apple.com:2195")
        }

        /// Whether APNs is configured at all (a signing key or a certificate).
        public var isConfigured: Bool { keyPath != nil || certificatePath != nil }
    }

    /// Firebase Cloud Messaging HTTP v1.
    public struct FCM: Sendable {
        public var serviceAccountPath: String?
        public var endpoint: String?
        public var tokenEndpoint: String?
        /// `fcmMessagesPerMinute`: the project's quota, applied before sending (codes first
        /// within it). Default 600,000, FCM's default per project.
        public var messagesPerMinute = 600_000
    }

    /// RuStore push (CONTRACT §4): a project and its static service token from the RuStore console.
    public struct RuStore: Sendable {
        public var projectId: String?
        /// `rustoreServiceToken`: a secret; never logged.
        public var serviceToken: String?
        /// `rustoreEndpoint`: base URL, RuStore's push host by default.
        public var endpoint: String?

        public var resolvedEndpoint: String { endpoint ?? "https://vkpns.rustore.ru" }
        public var isConfigured: Bool { projectId != nil && serviceToken != nil }
    }

    /// Huawei Push Kit (CONTRACT §4): the app's id and secret in AppGallery Connect (OAuth client
    /// credentials).
    public struct Huawei: Sendable {
        public var appId: String?
        /// `hmsClientSecret`: a secret; never logged.
        public var clientSecret: String?
        /// `hmsEndpoint`: the push API's base URL.
        public var endpoint: String?
        /// `hmsTokenEndpoint`: the OAuth token URL.
        public var tokenEndpoint: String?

        public var resolvedEndpoint: String { endpoint ?? "https://push-api.cloud.huawei.com" }
        public var resolvedTokenEndpoint: String { tokenEndpoint ?? "https://oauth-login.cloud.huawei.com/oauth2/v3/token" }
        public var isConfigured: Bool { appId != nil && clientSecret != nil }
    }

    /// Web Push (CONTRACT §4): the application server's VAPID key and contact, and the push
    /// services' hosts subscriptions may name.
    public struct WebPush: Sendable {
        /// `vapidPrivateKeyPath`: a PEM P-256 private key (a secret).
        public var vapidPrivateKeyPath: String?
        /// `vapidSubject`: `mailto:` or `https:` contact for the push services.
        public var vapidSubject: String?
        /// `webPushAllowedHosts`: comma-separated host patterns (`*.` for subdomains).
        public var allowedHosts = WebPushHosts(patterns: [])

        public var isConfigured: Bool { vapidPrivateKeyPath != nil }
    }

    /// One app's push credentials (CONTRACT §4, "Apps"): the top-level keys of `server.conf` are
    /// the default app, `app.<name>.<key>` the others.
    public struct PushApp: Sendable {
        public var apns = APNs()
        public var fcm = FCM()
        public var rustore = RuStore()
        public var huawei = Huawei()
        public var webPush = WebPush()

        public init() {}

        /// Whether the app configures any push service.
        public var configuresAService: Bool { apns.isConfigured || fcm.serviceAccountPath != nil || rustore.isConfigured || huawei.isConfigured || webPush.isConfigured }
    }

    /// The gateway's side of the bank channel (CONTRACT §3).
    public struct BankChannel: Sendable {
        /// `allowInsecureBank`: allow `http://` to a non-loopback bank proxy.
        public var allowInsecure = false
        /// `sbiOutboundUsername`/`sbiOutboundPassword`: HTTP Basic credentials sent to the bank.
        public var username: String?
        public var password: String?
        /// `sbiOutboundClientCertificatePath`/`sbiOutboundClientKeyPath`: PEM client certificate.
        public var clientCertificatePath: String?
        public var clientKeyPath: String?
        /// `sbiOutboundCaFile`: the CA bundle the bank's certificate is checked against (the
        /// system's when unset; `tlsCaFile` is for the push services).
        public var caFile: String?
    }

    /// Rate limits of the device API (CONTRACT §2, §5). A limit of 0 switches that one off.
    public struct DeviceLimits: Sendable {
        /// `registrationsPerAddressPerMinute`: register and verify calls per client address. Default 30.
        public var registrationsPerAddressPerMinute = 30
        /// `registrationsPerUserPerHour`: register calls per user and per device that reach the
        /// bank. Default 10.
        public var registrationsPerUserPerHour = 10
        /// `verificationAttempts`: codes checked per (bank client, user, device) within
        /// `verificationWindowMinutes`, across re-registrations. Default 5.
        public var verificationAttempts = 5
        /// `verificationWindowMinutes`. Default 60.
        public var verificationWindowMinutes = 60
    }

    /// The delivery engine.
    public struct Delivery: Sendable {
        /// `deliveryBatchSize`: deliveries claimed per batch. Default 500.
        public var batchSize = 500
        /// `deliveryLeaseSeconds`: how long a claim is held; a process that dies holding one
        /// delays those deliveries by at most this. Default 60.
        public var leaseSeconds = 60
        /// `deliveryConcurrency`: pushes in flight per push service and app (each its own budget)
        /// in the lane of other deliveries. Default 256.
        public var concurrency = 256
        /// `deliveryWorkers`: batches worked on at once per process (one claims while another
        /// sends), sharing `deliveryConcurrency`. Default 4.
        public var workers = 4
        /// `pushConnections`: HTTP/2 connections per push service. Default 2.
        public var connections = 2
        /// `apnsConnections`: HTTP/2 connections to APNs per app (the lane of other deliveries;
        /// the urgent lane has one of its own). Default: `pushConnections`.
        public var apnsConnections: Int?
        /// `pushThreads`: each push service's pushes are spread over this many HTTP/2 clients,
        /// each a thread of its own driving its own connections. Default: the number of cores.
        public var pushThreads = max(1, min(64, ProcessInfo.processInfo.activeProcessorCount))
        /// `urgentPriority`: sends of this priority or higher (one-time codes, payment alerts)
        /// take the urgent lane: claimed the moment they are stored, pushed on connections of
        /// their own that a blast cannot fill. Default 10.
        public var urgentPriority = 10
        /// `shutdownGraceSeconds`: on SIGTERM, how long in-flight sends may take before their
        /// deliveries are handed back to the queue. Default 20.
        public var shutdownGraceSeconds = 20
    }

    /// Confidential notifications (CONTRACT §8).
    public struct Confidential: Sendable {
        /// `confidentialTypes`: push types always sent confidential (comma-separated, e.g.
        /// `PIN_CODE`). Default none: only sends with `confidential` true.
        public var types: Set<PushType> = []
        /// `confidentialAlertText`: the neutral alert of a confidential push, replaced on the
        /// phone by the decrypted text. Default "New secure message".
        public var alertText = "New secure message"
    }

    public var http = HTTP()
    public var delivery = Delivery()
    public var confidential = Confidential()
    public var database = Database()
    /// The default app: the top-level push keys.
    public var defaultApp = PushApp()
    /// The apps of `app.<name>.<key>` sections, by name.
    public var apps: [String: PushApp] = [:]
    /// The default app's APNs settings.
    public var apns: APNs {
        get { defaultApp.apns }
        set { defaultApp.apns = newValue }
    }
    /// The default app's FCM settings.
    public var fcm: FCM {
        get { defaultApp.fcm }
        set { defaultApp.fcm = newValue }
    }
    /// `tlsCaFile`: extra CA bundle for outbound TLS.
    public var tlsCaFile: String?
    /// `allowInsecurePushEndpoints`: allow `http://` push-service endpoints on non-loopback
    /// addresses (tests behind a proxy); otherwise they must be `https://`.
    public var allowInsecurePushEndpoints = false
    /// `sbiOutboundWebServiceURL`: the bank proxy.
    public var bankProxyURL: String?
    /// How the gateway reaches and proves itself to the bank proxy.
    public var bankChannel = BankChannel()
    /// Limits on the device API's registration and verification.
    public var deviceLimits = DeviceLimits()
    /// Wallet passes: the web service's path, the fetch wait and the pass types' certificates.
    public var passes = Passes()
    /// The operator console's credentials.
    public var console = Console()
    /// `reportMaxAgeHours`: a report the bank still refuses this long after it was written is
    /// dead-lettered. Default 72.
    public var reportMaxAgeHours = 72
    /// `retentionDays`: notifications, their deliveries and acknowledgements are kept this many
    /// days and dropped, a day at a time, within a day after. Default 30.
    public var retentionDays = 30
    /// `bankProxyTimeoutSeconds`: how long one call to the bank proxy may take. Default 10.
    public var bankProxyTimeoutSeconds = 10
    /// `authTokenLifetimeSeconds`: how long a device's authentication token works before the
    /// app must register again. Default 90 days.
    public var authTokenLifetimeSeconds = 7_776_000
    /// `overrideSubscriptions`: a new device unsubscribes the user's older ones.
    public var overrideSubscriptions = false
    /// `caseInsensitiveIds`: user ids compared without case.
    public var caseInsensitiveIds = false
    /// `deviceExpiredPeriodMillis`: devices with no successful delivery for longer are deleted.
    public var deviceExpiredPeriodMillis: Int64 = 2_592_000_000
    /// `expirySweepIntervalSeconds`: how often expired deliveries are swept. Default 30.
    public var expirySweepIntervalSeconds = 30
    /// `logLevel`: trace, debug, info, notice, warning, error or critical. Default info.
    public var logLevel = Logger.Level.info
    /// Every key as it was read (the file, then environment overrides), for telling which keys a
    /// re-read changed (``keysChanged(in:)``); never shown, since values include secrets.
    var readValues: [String: String] = [:]
    /// Where each key was set (`server.conf:12`, or the environment variable), for errors found
    /// after the whole file is read (a file a key names that cannot be read).
    var keyLocations: [String: String] = [:]

    public init() {}

    /// Every app with its id (``PushRoute/defaultApp`` first, then the named ones by name).
    public var pushApps: [(id: String, app: PushApp)] {
        [(PushRoute.defaultApp, defaultApp)] + apps.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The user-id comparison rule.
    public var identifiers: UserIdentifiers { UserIdentifiers(caseInsensitive: caseInsensitiveIds) }
}
