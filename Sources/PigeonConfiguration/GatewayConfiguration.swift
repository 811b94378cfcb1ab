import Foundation
import PigeonCore
import PigeonDomain
import PigeonHTTP

/// Everything an operator sets in `server.conf` (CONTRACT §4–§5), with defaults.
package struct GatewayConfiguration: Sendable {
    /// The listeners (CONTRACT §5): `listen` faces phones, `bankListen` the bank and operators.
    package struct HTTP: Sendable {
        /// `listen`: address and port of the public listener, default `127.0.0.1:8080`.
        package var host = "127.0.0.1"
        package var port: UInt16 = 8080
        /// `tlsCertificatePath`/`tlsKeyPath`: PEM files; both set makes `listen` HTTPS.
        package var tlsCertificatePath: String?
        package var tlsKeyPath: String?
        /// `bankListen`: address and port of the bank-facing listener; nil serves everything on
        /// `listen`.
        package var bankAddress: (host: String, port: UInt16)?
        /// `bankTlsCertificatePath`/`bankTlsKeyPath`: both set makes `bankListen` HTTPS.
        package var bankTlsCertificatePath: String?
        package var bankTlsKeyPath: String?
        /// `bankClientCaFile`: on `bankListen`, only clients presenting a certificate signed by
        /// this CA are served.
        package var bankClientCaFile: String?
        /// `soapUsername`/`soapPassword`: HTTP Basic credentials required on the SOAP endpoint.
        package var soapUsername: String?
        package var soapPassword: String?
        /// `soapAuthentication = none` allows an unauthenticated SOAP service on a non-loopback
        /// address (with a warning); otherwise such a configuration does not start.
        package var soapAuthenticationDisabled = false
        /// `maxRequestBytes`: SOAP bodies beyond this get 413 (read only after the credentials
        /// were checked). Default 1 MiB.
        package var maxRequestBytes = 1 << 20
        /// `httpConnectionLimit`: connections open at once on `listen` (each costs a file
        /// descriptor and a few KiB, no thread). Default 16,384.
        package var connectionLimit = 16_384
        /// `bankConnectionLimit`: connections open at once on `bankListen`. Default 512.
        package var bankConnectionLimit = 512
        /// `bankPerAddressConnectionLimit`: connections from one client address on `bankListen`;
        /// 0 for none. Default 128.
        package var bankPerAddressConnectionLimit = 128
        /// `bankUnauthenticatedConnectionLimit`: connections on `bankListen` from one client
        /// address that have not authenticated — no head with a verified client certificate
        /// (with `bankClientCaFile`), no SOAP call with the bank's credentials: at most this many
        /// at once, each cut 5 s after it opened unless a head passed the checks by then. All
        /// addresses together hold at most half of `bankConnectionLimit`; past it a new
        /// connection cuts the oldest of the address holding the most, so the bank's
        /// authenticated connections always keep the other half. Default 16.
        package var bankUnauthenticatedConnectionLimit = 16
        /// `bankAllowedClients`: the client addresses and networks (CIDR, comma-separated) served
        /// on `bankListen`; any other connection is refused at accept, before anything is
        /// counted. Empty (the default): every address.
        package var bankAllowedClients: [IPNetwork] = []
        /// `perAddressConnectionLimit`: connections from one client address on `listen`; 0 for
        /// none (behind a reverse proxy every client has the proxy's address). Default 256.
        package var perAddressConnectionLimit = 256
        /// `httpIdleTimeoutSeconds`: a connection on which nothing moves this long is closed. Default 30.
        package var idleTimeoutSeconds = 30
        /// `requestDeadlineSeconds`: a whole request (head and body) must arrive within this of
        /// the server starting to wait for it; idle keep-alive connections close then too. Default 30.
        package var requestDeadlineSeconds = 30

        /// The bank-facing listener, when `bankListen` is set.
        package var bank: BankListener? {
            bankAddress.map {
                BankListener(host: $0.host, port: $0.port, tlsCertificatePath: bankTlsCertificatePath,
                             tlsKeyPath: bankTlsKeyPath, clientCaFile: bankClientCaFile)
            }
        }

        /// Whether the SOAP service would be served without any client authentication.
        package var soapIsUnauthenticated: Bool {
            soapUsername == nil && bank?.clientCaFile == nil
        }

        /// The address the SOAP service is reachable on.
        package var soapHost: String { bank?.host ?? host }
    }

    /// The bank-facing listener.
    package struct BankListener: Sendable {
        package var host: String
        package var port: UInt16
        package var tlsCertificatePath: String?
        package var tlsKeyPath: String?
        package var clientCaFile: String?
    }

    /// The PostgreSQL database.
    package struct Database: Sendable {
        /// `dbUrl`: a libpq URI or `jdbc:postgresql://…`.
        package var url: String?
        /// `dbUsername`/`dbPassword`: fill what the URL lacks.
        package var username: String?
        package var password: String?
        /// `dbPoolSize`: connections. Default 8.
        package var poolSize = 8
        /// `dbStatementTimeoutMillis`: per statement. Default 30 000.
        package var statementTimeoutMilliseconds = 30_000
        /// `migrationsPath`: the folder of SQL migrations; found next to the binary if unset.
        package var migrationsPath: String?
    }

    /// Apple Push Notification service.
    package struct APNs: Sendable {
        package var certificatePath: String?
        package var password: String?
        package var isProduction = false
        /// `apnsEndpoint`: base URL; defaults by ``isProduction``.
        package var endpoint: String?
        /// `apnsSandboxEndpoint`: base URL for devices registered with `environment = sandbox`;
        /// Apple's sandbox host by default.
        package var sandboxEndpoint: String?
        /// `apnsChannelEndpoint`: base URL of Apple's broadcast channel management API
        /// (CONTRACT §9); defaults by ``isProduction`` (port 2196, sandbox 2195).
        package var channelEndpoint: String?
        package var topic: String?
        package var keyPath: String?
        package var keyId: String?
        package var teamId: String?

        /// The base URL pushes go to.
        package var resolvedEndpoint: String {
            endpoint ?? (isProduction ? "https://api.push.apple.com" : "https://api.sandbox.push.apple.com")
        }

        /// The base URL pushes to sandbox tokens go to.
        package var resolvedSandboxEndpoint: String {
            sandboxEndpoint ?? "https://api.sandbox.push.apple.com"
        }

        /// The base URL of the channel management API.
        package var resolvedChannelEndpoint: String {
            channelEndpoint ?? (isProduction ? "https://api-manage-broadcast.push.apple.com:2196"
                : "https://api-manage-broadcast.sandbox.push.apple.com:2195")
        }

        /// Whether APNs is configured at all (a signing key or a certificate).
        package var isConfigured: Bool { keyPath != nil || certificatePath != nil }
    }

    /// Firebase Cloud Messaging HTTP v1.
    package struct FCM: Sendable {
        package var serviceAccountPath: String?
        package var endpoint: String?
        package var tokenEndpoint: String?
        /// `fcmMessagesPerMinute`: the project's quota, applied before sending (codes first
        /// within it). Default 600,000, FCM's default per project.
        package var messagesPerMinute = 600_000
    }

    /// RuStore push (CONTRACT §4): a project and its static service token from the RuStore console.
    package struct RuStore: Sendable {
        package var projectId: String?
        /// `rustoreServiceToken`: a secret; never logged.
        package var serviceToken: String?
        /// `rustoreEndpoint`: base URL, RuStore's push host by default.
        package var endpoint: String?

        package var resolvedEndpoint: String { endpoint ?? "https://vkpns.rustore.ru" }
        package var isConfigured: Bool { projectId != nil && serviceToken != nil }
    }

    /// Huawei Push Kit (CONTRACT §4): the app's id and secret in AppGallery Connect (OAuth client
    /// credentials).
    package struct Huawei: Sendable {
        package var appId: String?
        /// `hmsClientSecret`: a secret; never logged.
        package var clientSecret: String?
        /// `hmsEndpoint`: the push API's base URL.
        package var endpoint: String?
        /// `hmsTokenEndpoint`: the OAuth token URL.
        package var tokenEndpoint: String?
        /// `hmsCategory`: Push Kit's category for one-time codes (`PIN_CODE`), for a bank holding
        /// Huawei's self-classification right (e.g. `ACCOUNT`, `FINANCE`).
        package var codesCategory: String?
        /// `hmsCategories`: a category per notification type, e.g. `UNIVERSAL=MARKETING, INFO=ACCOUNT`.
        package var categoriesByType: [String: String] = [:]

        package var resolvedEndpoint: String { endpoint ?? "https://push-api.cloud.huawei.com" }
        package var resolvedTokenEndpoint: String { tokenEndpoint ?? "https://oauth-login.cloud.huawei.com/oauth2/v3/token" }
        package var isConfigured: Bool { appId != nil && clientSecret != nil }
    }

    /// Web Push (CONTRACT §4): the application server's VAPID key and contact, and the push
    /// services' hosts subscriptions may name.
    package struct WebPush: Sendable {
        /// `vapidPrivateKeyPath`: a PEM P-256 private key (a secret).
        package var vapidPrivateKeyPath: String?
        /// `vapidSubject`: `mailto:` or `https:` contact for the push services.
        package var vapidSubject: String?
        /// `webPushAllowedHosts`: comma-separated host patterns (`*.` for subdomains).
        package var allowedHosts = WebPushHosts(patterns: [])
        /// `webPushNavigate`: the page Safari's declarative notifications open when the
        /// notification's target is not an https URL; declarative Web Push is sent only with it.
        package var declarativeNavigate: String?
        /// `webPushTitle`: the declarative notification's title (default "Notification").
        package var declarativeTitle = "Notification"
        /// `webPushDeclarative`: `apple` (Apple's push service's subscriptions, the default), `all`, or `off`.
        package var declarativeScope = "apple"
        /// `webPushAppleHosts`: the hosts of Apple's Web Push service.
        package var appleHosts = WebPushHosts(patterns: ["*.push.apple.com"])

        package var isConfigured: Bool { vapidPrivateKeyPath != nil }
    }

    /// One app's push credentials (CONTRACT §4, "Apps"): the top-level keys of `server.conf` are
    /// the default app, `app.<name>.<key>` the others.
    package struct PushApp: Sendable {
        package var apns = APNs()
        package var fcm = FCM()
        package var rustore = RuStore()
        package var huawei = Huawei()
        package var webPush = WebPush()

        package init() {}

        /// Whether the app configures any push service.
        package var configuresAService: Bool { apns.isConfigured || fcm.serviceAccountPath != nil || rustore.isConfigured || huawei.isConfigured || webPush.isConfigured }
    }

    /// The gateway's side of the bank channel (CONTRACT §3).
    package struct BankChannel: Sendable {
        /// `allowInsecureBank`: allow `http://` to a non-loopback bank proxy.
        package var allowInsecure = false
        /// `sbiOutboundUsername`/`sbiOutboundPassword`: HTTP Basic credentials sent to the bank.
        package var username: String?
        package var password: String?
        /// `sbiOutboundClientCertificatePath`/`sbiOutboundClientKeyPath`: PEM client certificate.
        package var clientCertificatePath: String?
        package var clientKeyPath: String?
        /// `sbiOutboundCaFile`: the CA bundle the bank's certificate is checked against (the
        /// system's when unset; `tlsCaFile` is for the push services).
        package var caFile: String?
    }

    /// Rate limits of the device API (CONTRACT §2, §5). A limit of 0 switches that one off.
    package struct DeviceLimits: Sendable {
        /// `registrationsPerAddressPerMinute`: register and verify calls per client address. Default 30.
        package var registrationsPerAddressPerMinute = 30
        /// `registrationsPerUserPerHour`: register calls per user and per device that reach the
        /// bank. Default 10.
        package var registrationsPerUserPerHour = 10
        /// `verificationAttempts`: codes checked per (bank client, user, device) within
        /// `verificationWindowMinutes`, across re-registrations. Default 5.
        package var verificationAttempts = 5
        /// `verificationWindowMinutes`. Default 60.
        package var verificationWindowMinutes = 60
    }

    /// The delivery engine.
    package struct Delivery: Sendable {
        /// `deliveryBatchSize`: deliveries claimed per batch. Default 500.
        package var batchSize = 500
        /// `deliveryLeaseSeconds`: how long a claim is held; a process that dies holding one
        /// delays those deliveries by at most this. Default 60.
        package var leaseSeconds = 60
        /// `deliveryConcurrency`: pushes in flight per push service and app (each its own budget)
        /// in the lane of other deliveries. Default 256.
        package var concurrency = 256
        /// `deliveryWorkers`: batches worked on at once per process (one claims while another
        /// sends), sharing `deliveryConcurrency`. Default 4.
        package var workers = 4
        /// `pushConnections`: HTTP/2 connections per push service. Default 2.
        package var connections = 2
        /// `apnsConnections`: HTTP/2 connections to APNs per app (the lane of other deliveries;
        /// the urgent lane has one of its own). Default: `pushConnections`.
        package var apnsConnections: Int?
        /// `pushThreads`: each push service's pushes are spread over this many HTTP/2 clients,
        /// each a thread of its own driving its own connections. Default: the number of cores.
        package var pushThreads = max(1, min(64, ProcessInfo.processInfo.activeProcessorCount))
        /// `urgentPriority`: sends of this priority or higher (one-time codes, payment alerts)
        /// take the urgent lane: claimed the moment they are stored, pushed on connections of
        /// their own that a blast cannot fill. Default 10.
        package var urgentPriority = 10
        /// `shutdownGraceSeconds`: on SIGTERM, how long in-flight sends may take before their
        /// deliveries are handed back to the queue. Default 20.
        package var shutdownGraceSeconds = 20
    }

    /// Confidential notifications (CONTRACT §8).
    package struct Confidential: Sendable {
        /// `confidentialTypes`: push types always sent confidential (comma-separated, e.g.
        /// `PIN_CODE`). Default none: only sends with `confidential` true.
        package var types: Set<PushType> = []
        /// `confidentialAlertText`: the neutral alert of a confidential push, replaced on the
        /// phone by the decrypted text. Default "New secure message".
        package var alertText = "New secure message"
    }

    package var http = HTTP()
    package var delivery = Delivery()
    package var confidential = Confidential()
    package var database = Database()
    /// The default app: the top-level push keys.
    package var defaultApp = PushApp()
    /// The apps of `app.<name>.<key>` sections, by name.
    package var apps: [String: PushApp] = [:]
    /// The default app's APNs settings.
    package var apns: APNs {
        get { defaultApp.apns }
        set { defaultApp.apns = newValue }
    }
    /// The default app's FCM settings.
    package var fcm: FCM {
        get { defaultApp.fcm }
        set { defaultApp.fcm = newValue }
    }
    /// `tlsCaFile`: extra CA bundle for outbound TLS.
    package var tlsCaFile: String?
    /// `allowInsecurePushEndpoints`: allow `http://` push-service endpoints on non-loopback
    /// addresses (tests behind a proxy); otherwise they must be `https://`.
    package var allowInsecurePushEndpoints = false
    /// `sbiOutboundWebServiceURL`: the bank proxy.
    package var bankProxyURL: String?
    /// How the gateway reaches and proves itself to the bank proxy.
    package var bankChannel = BankChannel()
    /// Limits on the device API's registration and verification.
    package var deviceLimits = DeviceLimits()
    /// Wallet passes: the web service's path, the fetch wait and the pass types' certificates.
    package var passes = Passes()
    /// The operator console's credentials.
    package var console = Console()
    /// `reportMaxAgeHours`: a report the bank still refuses this long after it was written is
    /// dead-lettered. Default 72.
    package var reportMaxAgeHours = 72
    /// `retentionDays`: notifications, their deliveries and acknowledgements are kept this many
    /// days and dropped, a day at a time, within a day after. Default 30.
    package var retentionDays = 30
    /// `bankProxyTimeoutSeconds`: how long one call to the bank proxy may take. Default 10.
    package var bankProxyTimeoutSeconds = 10
    /// `authTokenLifetimeSeconds`: how long a device's authentication token works before the
    /// app must register again. Default 90 days.
    package var authTokenLifetimeSeconds = 7_776_000
    /// `overrideSubscriptions`: a new device unsubscribes the user's older ones.
    package var overrideSubscriptions = false
    /// `caseInsensitiveIds`: user ids compared without case.
    package var caseInsensitiveIds = false
    /// `deviceExpiredPeriodMillis`: devices with no successful delivery for longer are deleted.
    package var deviceExpiredPeriodMillis: Int64 = 2_592_000_000
    /// `expirySweepIntervalSeconds`: how often expired deliveries are swept. Default 30.
    package var expirySweepIntervalSeconds = 30
    /// `logLevel`: trace, debug, info, notice, warning, error or critical. Default info.
    package var logLevel = Logger.Level.info
    /// Every key as it was read (the file, then environment overrides), for telling which keys a
    /// re-read changed (``keysChanged(in:)``); never shown, since values include secrets.
    var readValues: [String: String] = [:]
    /// Where each key was set (`server.conf:12`, or the environment variable), for errors found
    /// after the whole file is read (a file a key names that cannot be read).
    var keyLocations: [String: String] = [:]

    package init() {}

    /// Every app with its id (``PushRoute/defaultApp`` first, then the named ones by name).
    package var pushApps: [(id: String, app: PushApp)] {
        [(PushRoute.defaultApp, defaultApp)] + apps.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The user-id comparison rule.
    package var identifiers: UserIdentifiers { UserIdentifiers(caseInsensitive: caseInsensitiveIds) }
}
