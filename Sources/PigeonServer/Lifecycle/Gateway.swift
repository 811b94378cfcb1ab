import BankProxy
import Foundation
import OutboundHTTP
import PigeonBankService
import PigeonConfiguration
import PigeonConsole
import PigeonCore
import PigeonDelivery
import PigeonDeviceAPI
import PigeonHTTP
import PigeonLDAP
import PigeonStore
import PigeonWallet
import PostgresDriver
import PushCore
import PushTransport
import Synchronization

/// A running gateway: the database pool, migrations applied, and the HTTP listener.
package final class Gateway: Sendable {
    /// Why the gateway could not start.
    package struct StartError: Error, CustomStringConvertible {
        package var description: String
    }

    package let configuration: GatewayConfiguration
    package let metrics: MetricsRegistry
    /// The port `listen` bound (differs from the configured one when that is 0).
    package let port: UInt16
    /// The port `bankListen` bound; `port` when everything is served on `listen`.
    package let bankPort: UInt16
    /// The engine's pool, for handing claims back at the stop.
    private let enginePool: PostgresPool
    /// The HTTPS listeners, with the files ``reloadCertificates()`` reads again.
    let listenerCertificates: [ListenerCertificate]
    /// `consoleUsersFile`, read again by a reload.
    let consoleUsers: ConsoleUsersFile?
    let logger: Logger
    /// The lease owner name of this process's delivery engine, when it runs one.
    private let engineOwner: String?
    /// Every listener, pool and client this gateway opened, and its background services: one
    /// start, rollback and stop for all.
    private let lifecycle: Lifecycle

    /// What the running binary was built from, for `pigeon_build_info`.
    package struct Build: Sendable {
        package var version: String
        package var commit: String

        package init(version: String, commit: String) {
            self.version = version
            self.commit = commit
        }
    }

    /// Opens the database, applies pending migrations and starts serving. A start that fails
    /// part way closes everything it opened. `clock`, when given, is the time of the console's
    /// sessions and of the per-address limits kept in memory (tests); otherwise they read the system's.
    package static func start(configuration: GatewayConfiguration, logger: Logger,
                             build: Build = Build(version: "unknown", commit: "unknown"),
                             clock: (@Sendable () -> Date)? = nil) async throws -> Gateway {
        let lifecycle = Lifecycle(logger: logger.withLabel("pigeon.lifecycle"))
        do {
            let pool = try lifecycle.open("database pool", { try openPool(configuration, logger: logger) },
                                          close: { pool, closing in pool.close(timeout: closing.timeout()) })
            let migrator = try loadMigrator(configuration)
            let report = try await migrator.migrate(pool, logger: logger)
            logger.info("database schema current", metadata: ["applied": String(report.applied.count), "version": String(migrator.migrations.last?.version ?? 0)])
            // Today's partitions must exist before the first send; a lock held by another
            // process is waited for longer here than in the hourly pass.
            let created = try await Retention(pool: pool).prepareDays(around: Date(), lockTimeout: .seconds(30))
            if created > 0 { logger.info("history partitions created", metadata: ["tables": String(created)]) }
            return try Gateway(configuration: configuration, pool: pool, migrator: migrator, lifecycle: lifecycle, logger: logger, build: build, clock: clock)
        } catch {
            await lifecycle.rollBack()
            throw error
        }
    }

    private init(configuration: GatewayConfiguration, pool: PostgresPool, migrator: Migrator, lifecycle: Lifecycle, logger: Logger, build: Build,
                 clock: (@Sendable () -> Date)?) throws {
        let metrics = MetricsRegistry()
        metrics.describe(Metric.catalogue)
        ProcessMetrics.collect(into: metrics)
        metrics.set(Metric.buildInfo, labels: ["version": build.version, "commit": build.commit], to: 1)
        let identifiers = configuration.identifiers
        let http = configuration.http
        // Opened in the order they are used from: each closes (at the stop, or when a later
        // step fails) before what it uses — the listeners before the clients and pools their
        // requests use, the push clients before the pools.
        //
        // Phones and the bank do not share database connections when the bank has its own
        // listener: the device API gets a pool of its own, so a flood of acknowledgements never
        // stands in front of a sendNotification.
        let devicePoolSize = max(2, configuration.database.poolSize / 2)
        let devicePool = try http.bank.map { _ in
            try lifecycle.open("device API database pool",
                               { try Self.openPool(configuration, size: devicePoolSize, label: "pigeon.db.devices", logger: logger) },
                               close: { pool, closing in pool.close(timeout: closing.timeout(keeping: 0.5)) })
        } ?? pool
        // The engine and the background work (sweeps, outbox, Wallet pushes, metrics sampling)
        // have connections of their own: the bank's and the phones' calls never wait for a
        // connection the engine holds.
        let enginePool = try lifecycle.open("engine database pool",
                                            { try Self.openPool(configuration, size: max(2, configuration.database.poolSize / 2), label: "pigeon.db.engine", logger: logger) },
                                            close: { pool, closing in pool.close(timeout: closing.timeout(keeping: 0.5)) })
        // The urgent lane's own connections: a code's claim and look-ups never wait for one
        // behind a blast's claims, look-ups and outcome writes, or a sweep.
        let urgentPool = try lifecycle.open("urgent lane database pool",
                                            { try Self.openPool(configuration, size: 2, label: "pigeon.db.urgent", logger: logger) },
                                            close: { pool, closing in pool.close(timeout: closing.timeout(keeping: 0.5)) })
        // The bank proxy: HTTP/1.1 or HTTP/2, a few connections, each call bounded in time,
        // the gateway's own credentials and the bank's CA.
        let bankHTTP = try configuration.bankProxyURL.map { url in
            try lifecycle.open("bank proxy client", { try Self.bankClient(configuration, url: url) },
                               awaitClose: { client, closing in await client.close(abandonRunning: closing.abandonRunning) })
        }
        let bankCredentials = configuration.bankChannel.username.map { ($0, configuration.bankChannel.password ?? "") }
        let bank = configuration.bankProxyURL.flatMap { url in
            bankHTTP.map { BankProxyClient(url: url, http: $0, credentials: bankCredentials) }
        }
        // The push clients, before the listeners: the SOAP service manages broadcast channels
        // through APNs, and the console shows the clients' connections.
        let transports = try lifecycle.open("push clients", { try PushTransports(configuration: configuration, logger: logger.withLabel("pigeon.delivery"), metrics: metrics) },
                                            awaitClose: { transports, closing in await Self.close(transports.clients.map(\.client), closing) })
        let passPushers = try lifecycle.open("Wallet push clients", { try PassPushers(configuration: configuration, keyTransport: transports.defaultAppKeyTransport) },
                                             awaitClose: { pushers, closing in await Self.close(pushers.clients.map(\.client), closing) })
        let pushClients = transports.clients + passPushers.clients

        // What the request side stores wakes the engines at once (GatewayWakes).
        let wakes = GatewayWakes(urgentPriority: configuration.delivery.urgentPriority)
        let notificationStore = NotificationStore(pool: pool, identifiers: identifiers, logger: logger.withLabel("pigeon.db"))
        let pushActivity = PushActivity(metrics: metrics)
        // The console shows the listeners' certificates, and is itself served by a listener.
        let certificateList = LateList<(listener: String, server: HTTPServer)>()
        let auditTrail = PostgresAuditTrail(pool: pool)
        let consoleStores = RequestStores.ConsoleStores(
            sessions: PostgresConsoleSessions(pool: pool), audit: auditTrail,
            data: ConsoleData(
                store: ConsoleStore(pool: pool, identifiers: identifiers), notifications: notificationStore, outbox: Outbox(pool: pool),
                metrics: metrics, pool: pool, migrator: migrator, activity: pushActivity, pushClients: pushClients,
                listenerCertificates: certificateList,
                settings: configuration.effectiveSettings(),
                testPusher: { [testPusher = ConsoleTestPusher(subscriptions: SubscriptionStore(pool: pool, identifiers: identifiers), senders: transports.urgentSenders)] user in
                    try await testPusher.push(user: user)
                }))
        // `/ready` answers 503 from the first moment of a stop, before the listeners stop
        // accepting: a load balancer with kept-alive connections stops routing at once.
        let stopping = lifecycle.stopping
        let requestSide = try RequestSide(
            configuration: configuration,
            stores: .postgres(
                main: pool, devices: devicePool, identifiers: identifiers, reachPrecision: configuration.reachPrecision,
                notifications: notificationStore, bank: bank,
                channels: ActivityChannels(apps: transports.channelAPNs, store: ActivityStore(pool: pool, identifiers: identifiers),
                                           metrics: metrics, logger: logger.withLabel("pigeon.activities")),
                console: consoleStores),
            events: GatewayRequestEvents(deliveries: wakes.deliveries, deadlines: wakes.deadlines, activities: wakes.activities, reports: wakes.reports),
            health: HealthEndpoint(pool: pool, migrator: migrator, stopping: stopping, logger: logger.withLabel("pigeon.health")),
            metrics: metrics, logger: logger, clock: clock)
        let console = requestSide.console
        let consoleUsers = requestSide.consoleUsers
        if configuration.console.isConfigured && console == nil {
            logger.warning("the console is not served: set bankListen (the console never faces phones), or serve everything on a loopback listen")
        } else if !configuration.console.isConfigured {
            logger.notice("the console is off: set consoleUsersFile (or consoleUsername and consolePassword) to serve it at /console")
        }
        /// A listener: it stops accepting in the stop's graceful phase, and its requests in
        /// progress get what time is left (up to 5 s) to be answered when it closes.
        func listen(_ name: String, _ start: () throws -> HTTPServer) throws -> HTTPServer {
            try lifecycle.open(name, start, quiesce: { $0.quiesce() }, awaitClose: { server, closing in
                await server.drain(upTo: min(5, closing.seconds(keeping: 1)))
                await BlockingWork.run("pigeon-close") { server.stop() }
            })
        }
        let tlsListeners = configuration.tlsListeners
        let publicFiles = tlsListeners.first { $0.listener == "public" }
        let publicTLS = try Self.loadTLS(publicFiles, clientCA: nil)
        let publicRouter = requestSide.router(http.bank == nil ? [.devices, .bank] : [.devices], tls: publicTLS != nil)
        let publicServer = try listen("public listener") { try Self.listening(publicFiles) { try HTTPServer(
            configuration: .init(
                host: http.host, port: http.port, connectionLimit: http.connectionLimit,
                perAddressConnectionLimit: http.perAddressConnectionLimit, idleTimeoutSeconds: http.idleTimeoutSeconds,
                requestDeadlineSeconds: http.requestDeadlineSeconds, ioThreads: 1, handlerThreads: 4,
                // A flood of device calls waits here, connections suspended, not in its pool's queue.
                concurrentHandlers: http.bank == nil ? 256 : 4 * devicePoolSize, tls: publicTLS,
                requestHeaders: publicRouter.requestHeaders),
            logger: logger.withLabel("pigeon.http"),
            admit: { publicRouter.admit($0) }, handler: { await publicRouter.handle($0) }) } }
        var servers = [("public", publicServer)]
        var listenerCertificates = publicFiles.map { [ListenerCertificate(files: $0, server: publicServer)] } ?? []
        logger.notice("listening", metadata: [
            "address": "\(publicTLS == nil ? "http" : "https")://\(http.host):\(publicServer.port)",
            "serves": http.bank == nil ? "device API, PassKit web service, SOAP, metrics" : "device API, PassKit web service",
            "passWebServicePath": configuration.passes.webServicePath])
        if let bankListener = http.bank {
            let bankFiles = tlsListeners.first { $0.listener == "bank" }
            let bankTLS = try Self.loadTLS(bankFiles, clientCA: bankListener.clientCaFile)
            let bankRouter = requestSide.router([.bank], tls: bankTLS != nil)
            let bankServer = try listen("bank listener") { try Self.listening(bankFiles) { try HTTPServer(
                configuration: .init(
                    host: bankListener.host, port: bankListener.port, connectionLimit: http.bankConnectionLimit,
                    perAddressConnectionLimit: http.bankPerAddressConnectionLimit, idleTimeoutSeconds: http.idleTimeoutSeconds,
                    requestDeadlineSeconds: http.requestDeadlineSeconds, ioThreads: 1, handlerThreads: 4,
                    concurrentHandlers: 256, tls: bankTLS,
                    // Connections that have not authenticated (no accepted client certificate, no
                    // SOAP call with the bank's credentials): a share per address and half the
                    // limit in all, a crowd losing its own oldest ones first, so they cannot take
                    // the bank's slots; silent ones are cut after a few seconds.
                    unauthenticatedLimit: max(1, http.bankConnectionLimit / 2),
                    unauthenticatedPerAddressLimit: http.bankUnauthenticatedConnectionLimit,
                    unauthenticatedDeadlineSeconds: min(5, max(1, http.requestDeadlineSeconds)),
                    allowedClients: http.bankAllowedClients, requestHeaders: bankRouter.requestHeaders),
                logger: logger.withLabel("pigeon.http.bank"),
                admit: { bankRouter.admit($0) }, handler: { await bankRouter.handle($0) }) } }
            servers.append(("bank", bankServer))
            if let bankFiles { listenerCertificates.append(ListenerCertificate(files: bankFiles, server: bankServer)) }
            logger.notice("listening", metadata: [
                "address": "\(bankTLS == nil ? "http" : "https")://\(bankListener.host):\(bankServer.port)",
                "serves": console == nil ? "SOAP, WSDLs, metrics, ready" : "SOAP, WSDLs, metrics, ready, console", "clientCertificates": bankListener.clientCaFile == nil ? "no" : "required"])
        }
        for warning in configuration.exposureWarnings {
            logger.warning(warning.message, metadata: ["address": warning.address])
        }
        certificateList.set(listenerCertificates.map { ($0.files.addressKey, $0.server) })
        HTTPMetrics.collect(servers: servers, into: metrics)
        DatabasePoolMetrics.collect(pools: [("main", pool), ("engine", enginePool), ("urgent", urgentPool)]
                                    + (devicePool === pool ? [] : [("devices", devicePool)]), into: metrics)

        // The background services, started together once every resource is open.
        MetricsSampler.collect(pushClients, into: metrics)
        let engines = EngineSide(
            configuration: configuration, enginePool: enginePool, urgentPool: urgentPool, transports: transports, passPushers: passPushers,
            bank: bank, wakes: wakes, console: console == nil ? nil : EngineSide.ConsoleWork(activity: pushActivity, auditTrail: auditTrail),
            metrics: metrics, logger: logger)
        lifecycle.start(engines.services)

        self.configuration = configuration
        self.metrics = metrics
        self.enginePool = enginePool
        self.listenerCertificates = listenerCertificates
        self.consoleUsers = consoleUsers
        self.port = publicServer.port
        self.bankPort = servers.last?.1.port ?? publicServer.port
        self.logger = logger
        self.engineOwner = engines.deliveryOwner
        self.lifecycle = lifecycle
    }

    /// Stops the gateway within one deadline, `shutdownGraceSeconds` (default 20, under a
    /// container platform's 30-second grace), in ``Lifecycle``'s phases (CONTRACT §10): `/ready`
    /// answers 503 and the listeners stop accepting; the engines stop claiming and start no
    /// push, hand back at once what no push service has received, and record the outcomes of the
    /// pushes on the wire as they arrive; the outbox sender and sweeps stop; what is still running
    /// a few seconds before the deadline is abandoned, and the deliveries this process still
    /// holds are handed back to the queue; then the listeners answer their last requests and
    /// everything closes. Awaited: requests in progress go on using the cooperative pool, and the
    /// closes that join threads run on a thread of their own.
    package func shutdown() async {
        let grace = Double(configuration.delivery.shutdownGraceSeconds)
        logger.notice("shutting down", metadata: ["deadlineSeconds": String(Int(grace))])
        let enginePool = enginePool
        let engineOwner = engineOwner
        let logger = logger
        await lifecycle.stop(grace: grace) { finished, closing in
            if !finished {
                logger.warning("work in flight did not finish before the shutdown deadline; abandoning it and handing their deliveries back",
                               metadata: ["shutdownGraceSeconds": String(Int(grace))])
            }
            guard let engineOwner else { return }
            // Whatever this process still holds goes back to the queue for another process (or
            // the next start); a late outcome of an abandoned push then changes nothing.
            let queue = DeliveryQueue(pool: enginePool)
            let released = await BoundedWait.value(withinSeconds: closing.seconds(atLeast: 1)) { try await queue.release(owner: engineOwner) }
            if let released, released > 0 {
                logger.notice("deliveries handed back to the queue", metadata: ["deliveries": String(released)])
            }
        }
        logger.notice("stopped")
    }

    /// Closes HTTP clients side by side (each answers its last requests or abandons them).
    private static func close(_ clients: [HTTP2Client], _ closing: Lifecycle.Closing) async {
        await withTaskGroup(of: Void.self) { group in
            for client in clients {
                group.addTask { await client.close(abandonRunning: closing.abandonRunning) }
            }
        }
    }

    /// The HTTP client of the bank proxy at `url`: HTTP/1.1 or HTTP/2, a few connections, each
    /// call bounded in time, the gateway's own client certificate and the bank's CA.
    static func bankClient(_ configuration: GatewayConfiguration, url: String) throws -> HTTP2Client {
        try HTTP2Client(configuration: .init(
            maxConnections: 8, maxStreamsPerConnection: 10, timeout: .seconds(configuration.bankProxyTimeoutSeconds),
            caFile: configuration.bankChannel.caFile,
            clientCertificate: configuration.bankChannel.clientCertificatePath.map {
                HTTP2Client.ClientCertificate(path: $0, type: .pem, keyPath: configuration.bankChannel.clientKeyPath)
            },
            threadName: "bank-\(URLComponents(string: url)?.port ?? 0)"))
    }

    /// The database pool of a configuration (no connection is opened until first use), of
    /// `dbPoolSize` connections unless `size` says otherwise.
    package static func openPool(_ configuration: GatewayConfiguration, size: Int? = nil, label: String = "pigeon.db", logger: Logger) throws -> PostgresPool {
        guard let url = configuration.database.url else {
            throw StartError(description: "dbUrl is not set")
        }
        let settings = try PostgresConnectionSettings(url: url, username: configuration.database.username, password: configuration.database.password)
        return PostgresPool(
            configuration: .init(settings: settings, size: size ?? configuration.database.poolSize, statementTimeoutMilliseconds: configuration.database.statementTimeoutMilliseconds),
            logger: logger.withLabel(label))
    }

    /// The migrations of `migrationsPath`, or of the `migrations` folder found near the binary.
    package static func loadMigrator(_ configuration: GatewayConfiguration) throws -> Migrator {
        Migrator(migrations: try loadMigrations(configuration).migrations)
    }

    /// The migrations `serve` and `migrate` apply, and the folder they come from (what
    /// `check-config` reports): `migrationsPath`, or the `migrations` folder found near the
    /// binary. No folder, or one without migrations, is an error naming it.
    package static func loadMigrations(_ configuration: GatewayConfiguration) throws -> (directory: URL, migrations: [Migration]) {
        let directory = configuration.database.migrationsPath.map { URL(fileURLWithPath: $0) } ?? Migration.locateDirectory()
        guard let directory else {
            throw StartError(description: "cannot find the migrations folder; set migrationsPath")
        }
        let migrations: [Migration]
        do {
            migrations = try Migration.load(from: directory)
        } catch {
            throw StartError(description: "migrationsPath \(directory.path): \(error)")
        }
        guard !migrations.isEmpty else {
            throw StartError(description: "no migrations in \(directory.path)")
        }
        return (directory, migrations)
    }

    private static func loadTLS(_ files: ListenerTLSFiles?, clientCA: String?) throws -> HTTPServer.TLS? {
        guard let files else { return nil }
        let pair = try files.read()
        do {
            return HTTPServer.TLS(certificatePEM: pair.certificatePEM, keyPEM: pair.keyPEM,
                                  clientCAPEM: try clientCA.map { try String(contentsOfFile: $0, encoding: .utf8) })
        } catch {
            throw StartError(description: "cannot read bankClientCaFile \(clientCA ?? ""): \(error.localizedDescription)")
        }
    }

    /// Starts a listener. The listener checks its certificate and key itself (parsable, the key
    /// the leaf's); a failure names the files, since a refused pair is one of the reasons.
    private static func listening(_ files: ListenerTLSFiles?, _ start: () throws -> HTTPServer) throws -> HTTPServer {
        do {
            return try start()
        } catch {
            guard let files else { throw error }
            throw StartError(description: "\(files.addressKey) with certificate \(files.certificatePath) and key \(files.keyPath): \(error)")
        }
    }

}
