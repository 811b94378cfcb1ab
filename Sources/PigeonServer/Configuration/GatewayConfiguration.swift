import Foundation
import PigeonCore

/// Everything an operator sets in `server.conf` (CONTRACT §4–§5), with defaults.
public struct GatewayConfiguration: Sendable {
    /// The HTTP listener.
    public struct HTTP: Sendable {
        /// `listen`: address and port, default `127.0.0.1:8080`.
        public var host = "127.0.0.1"
        public var port: UInt16 = 8080
        /// `tlsCertificatePath`/`tlsKeyPath`: PEM files; both set makes the listener HTTPS.
        public var tlsCertificatePath: String?
        public var tlsKeyPath: String?
        /// `soapUsername`/`soapPassword`: HTTP Basic credentials required on the SOAP endpoint.
        public var soapUsername: String?
        public var soapPassword: String?
        /// `maxRequestBytes`: bodies beyond this get 413. Default 1 MiB.
        public var maxRequestBytes = 1 << 20
        /// `httpConnectionLimit`: concurrent connections (one thread each). Default 256.
        public var connectionLimit = 256
        /// `httpIdleTimeoutSeconds`: idle or stalled connections are closed. Default 30.
        public var idleTimeoutSeconds = 30
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
        public var topic: String?
        public var keyPath: String?
        public var keyId: String?
        public var teamId: String?

        /// The base URL pushes go to.
        public var resolvedEndpoint: String {
            endpoint ?? (isProduction ? "https://api.push.apple.com" : "https://api.sandbox.push.apple.com")
        }
    }

    /// Firebase Cloud Messaging HTTP v1.
    public struct FCM: Sendable {
        public var serviceAccountPath: String?
        public var endpoint: String?
        public var tokenEndpoint: String?
    }

    /// The delivery engine.
    public struct Delivery: Sendable {
        /// `deliveryBatchSize`: deliveries claimed per batch. Default 500.
        public var batchSize = 500
        /// `deliveryLeaseSeconds`: how long a claim is held; a process that dies holding one
        /// delays those deliveries by at most this. Default 60.
        public var leaseSeconds = 60
        /// `deliveryConcurrency`: pushes in flight per gateway process. Default 256.
        public var concurrency = 256
        /// `deliveryWorkers`: batches worked on at once per process (one claims while another
        /// sends), sharing `deliveryConcurrency`. Default 4.
        public var workers = 4
        /// `pushConnections`: HTTP/2 connections per push service. Default 2.
        public var connections = 2
        /// `shutdownGraceSeconds`: on SIGTERM, how long in-flight sends may take before their
        /// deliveries are handed back to the queue. Default 20.
        public var shutdownGraceSeconds = 20
    }

    public var http = HTTP()
    public var delivery = Delivery()
    public var database = Database()
    public var apns = APNs()
    public var fcm = FCM()
    /// `tlsCaFile`: extra CA bundle for outbound TLS.
    public var tlsCaFile: String?
    /// `sbiOutboundWebServiceURL`: the bank proxy.
    public var bankProxyURL: String?
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

    public init() {}

    /// The user-id comparison rule.
    public var identifiers: UserIdentifiers { UserIdentifiers(caseInsensitive: caseInsensitiveIds) }
}
