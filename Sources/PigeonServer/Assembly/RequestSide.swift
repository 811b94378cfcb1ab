import Foundation
import PigeonBankService
import PigeonConfiguration
import PigeonConsole
import PigeonCore
import PigeonDeviceAPI
import PigeonDomain
import PigeonHTTP
import PigeonLDAP
import PigeonWallet

/// The request side composed once from the configuration, its seams (``RequestStores``) and the
/// events it tells the background work of: the endpoints every listener shares, and a
/// ``Router`` per listener. `Gateway` builds it on PostgreSQL; the request-side tests build the
/// same one on in-memory stores, so what they test is what the gateway serves.
struct RequestSide: Sendable {
    let inbound: InboundEndpoint
    let devices: DeviceEndpoint
    let passKit: PassKitEndpoint
    /// The operator console, when configured and on a listener that does not face phones.
    let console: ConsoleEndpoint?
    /// `consoleUsersFile` as read, for a reload to read again.
    let consoleUsers: ConsoleUsersFile?
    let outboundWSDL: OutboundWSDL
    let health: HealthEndpoint
    let soapAuthentication: BasicAuthentication?
    /// Failed SOAP sign-ins per client address and user name, and minute: one count for every
    /// listener's router.
    let soapFailures: AddressRateLimit
    let maxRequestBytes: Int
    let metrics: MetricsRegistry
    let logger: Logger

    /// Why the request side could not be built.
    struct BuildError: Error, CustomStringConvertible {
        var description: String
    }

    /// `clock`, when given, is the time of the console's sessions and of every per-address limit
    /// kept in memory (sign-ins, registrations, the PassKit web service); the endpoints otherwise
    /// read the system's.
    init(configuration: GatewayConfiguration, stores: RequestStores, events: any RequestEvents, health: HealthEndpoint,
         metrics: MetricsRegistry, logger: Logger, clock: (@Sendable () -> Date)? = nil) throws {
        let http = configuration.http
        let seconds: @Sendable () -> Double
        if let clock { seconds = { clock().timeIntervalSince1970 } } else { seconds = AddressRateLimit.uptime }
        func perMinute(_ limit: Int) -> AddressRateLimit { AddressRateLimit(perMinute: limit, clock: seconds) }
        inbound = InboundEndpoint(
            notifications: stores.notifications, subscriptions: stores.subscriptions, passes: stores.passes,
            passSigners: try configuration.passes.signers(), maxRequestBytes: http.maxRequestBytes,
            confidentialTypes: configuration.confidential.types, activities: stores.activities, channels: stores.channels,
            events: events, logger: logger.withLabel("pigeon.soap"), metrics: metrics)
        devices = DeviceEndpoint(
            registry: stores.registry, acknowledgements: stores.acknowledgements, bank: stores.bank,
            overrideSubscriptions: configuration.overrideSubscriptions, tokenLifetime: .seconds(configuration.authTokenLifetimeSeconds),
            limits: DeviceRateLimits(Self.deviceLimits(configuration.deviceLimits), clock: seconds), rateLimits: stores.rateLimits,
            identifiers: configuration.identifiers,
            apps: Dictionary(uniqueKeysWithValues: configuration.pushApps.map { ($0.id, $0.app.webPush.allowedHosts) }),
            logger: logger.withLabel("pigeon.devices"), metrics: metrics, activities: stores.activityTokens, events: events)
        passKit = PassKitEndpoint(
            prefix: configuration.passes.webServicePath, store: stores.wallet,
            limits: .init(perDevice: configuration.passes.registrationsPerDevice, perPass: configuration.passes.registrationsPerPass),
            addressLimit: perMinute(configuration.passes.requestsPerAddressPerMinute), metrics: metrics,
            logger: logger.withLabel("pigeon.passkit"))
        consoleUsers = try configuration.console.usersFile.map { path in
            do { return try ConsoleUsersFile(path: path) } catch { throw BuildError(description: "consoleUsersFile: \(error)") }
        }
        if let consoleStores = stores.console, configuration.consoleIsServed {
            let sessions = ConsoleSessions(store: consoleStores.sessions, clock: clock ?? { Date() })
            console = ConsoleEndpoint(
                accounts: ConsoleAccounts(Self.consoleAccounts(configuration.console, usersFile: consoleUsers)), sessions: sessions,
                audit: consoleStores.audit, signInLimit: perMinute(10), apiSignInLimit: perMinute(10),
                secureCookie: configuration.consoleListenerUsesTLS, data: consoleStores.data, logger: logger.withLabel("pigeon.console"))
        } else {
            console = nil
        }
        outboundWSDL = OutboundWSDL(bankProxyURL: configuration.bankProxyURL)
        self.health = health
        soapAuthentication = http.soapUsername.map { BasicAuthentication(username: $0, password: http.soapPassword ?? "") }
        soapFailures = perMinute(10)
        maxRequestBytes = http.maxRequestBytes
        self.metrics = metrics
        self.logger = logger
    }

    /// The router of a listener serving `surfaces`; the console only on the bank's surface.
    func router(_ surfaces: Router.Surfaces, tls: Bool) -> Router {
        Router(
            surfaces: surfaces, inbound: inbound, devices: devices, passKit: passKit,
            console: surfaces.contains(.bank) ? console : nil, outboundWSDL: outboundWSDL, health: health, metrics: metrics,
            soapAuthentication: soapAuthentication, soapFailures: soapFailures, scheme: tls ? "https" : "http", maxRequestBytes: maxRequestBytes,
            logger: logger.withLabel("pigeon.http"))
    }

    /// The device API's limits as `server.conf` sets them.
    private static func deviceLimits(_ limits: GatewayConfiguration.DeviceLimits) -> DeviceRateLimits.Settings {
        DeviceRateLimits.Settings(
            registrationsPerAddressPerMinute: limits.registrationsPerAddressPerMinute, registrationsPerUserPerHour: limits.registrationsPerUserPerHour,
            verificationAttempts: limits.verificationAttempts, verificationWindowMinutes: limits.verificationWindowMinutes)
    }

    /// Where operators sign in, in the order asked: the users file, the bank's directory, the
    /// single `consoleUsername`.
    private static func consoleAccounts(_ console: GatewayConfiguration.Console, usersFile: ConsoleUsersFile?) -> [any ConsoleAccountSource] {
        var accounts: [any ConsoleAccountSource] = usersFile.map { [$0] } ?? []
        let ldap = console.ldap
        if let url = ldap.url, let template = ldap.userDNTemplate {
            accounts.append(ConsoleDirectoryAccounts(
                directory: LDAPDirectory(url: url, caFile: ldap.caFile, startTLS: ldap.startTLS, timeoutMilliseconds: ldap.timeoutSeconds * 1000),
                userDNTemplate: template, groups: ldap.groups.compactMap { group in ConsoleRole(rawValue: group.role).map { ($0, group.dn) } }))
        }
        if let username = console.username, let password = console.password {
            accounts.append(ConsoleSingleAccount(username: username, password: password))
        }
        return accounts
    }
}
