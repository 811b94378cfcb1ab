import Foundation
import OutboundHTTP
import PigeonConfiguration
import PigeonCore
import PigeonDomain
import PigeonStore
import PushCore

/// `pigeon check-config --connect`: what a configuration reaches, each a line OK or FAILED with
/// the reason — the database (and whether migrations are pending), the bank proxy's WSDL, the
/// address of every push service host the configured apps use, and each app's APNs credentials
/// tried against each of its environments.
package enum ConnectionCheck {
    package struct Line: Sendable, Equatable {
        package var target: String
        package var ok: Bool
        package var detail: String

        /// One line: the reason's own line breaks (libpq's) become spaces.
        package var description: String {
            let reason = detail.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
            return "\(target): \(ok ? "OK" : "FAILED") (\(reason))"
        }
    }

    package static func run(_ configuration: GatewayConfiguration, logger: Logger) async -> [Line] {
        var lines = [await database(configuration, logger: logger)]
        if let url = configuration.bankProxyURL { lines.append(await bank(configuration, url: url)) }
        for (name, url) in pushHosts(configuration) { lines.append(resolve(name, url: url)) }
        lines += await apnsCredentials(configuration, logger: logger)
        return lines
    }

    /// A device token no device has: APNs checks a push's credentials before its token.
    static let probeToken = String(repeating: "0", count: 64)

    /// Each app's APNs key (or certificate) tried against each environment its devices may use,
    /// as the urgent lane sends: a push to ``probeToken``. APNs checks the credentials first, so
    /// `BadDeviceToken` means they were accepted there; a key restricted to the other environment
    /// or to other topics, a wrong key id or team, is named. Nothing reaches a device.
    static func apnsCredentials(_ configuration: GatewayConfiguration, logger: Logger) async -> [Line] {
        guard configuration.pushApps.contains(where: { $0.app.apns.isConfigured }) else { return [] }
        let transports: PushTransports
        do {
            transports = try PushTransports(configuration: configuration, logger: logger, metrics: MetricsRegistry())
        } catch {
            return [Line(target: "APNs credentials", ok: false, detail: "\(error)")]
        }
        defer { transports.clients.forEach { $0.client.shutdown(abandonRunning: true) } }
        let routes = transports.urgentSenders.keys.filter { $0.platform == .ios }
            .sorted { ($0.appId, $0.environment.rawValue) < ($1.appId, $1.environment.rawValue) }
        let message = PushMessage(notificationId: "check-config", text: "check-config", urgency: .normal, expiresAt: Date().addingTimeInterval(60))
        var lines: [Line] = []
        for route in routes {
            guard let sender = transports.urgentSenders[route], let app = configuration.pushApps.first(where: { $0.id == route.appId })?.app else { continue }
            let credential = app.apns.keyId.map { "key \($0)" } ?? "certificate"
            let host = URLComponents(string: route.environment == .production ? app.apns.resolvedEndpoint : app.apns.resolvedSandboxEndpoint)?.host ?? "?"
            let target = "APNs \(credential) \(route.environment.rawValue)\(route.appId.isEmpty ? "" : " (app \(route.appId))") \(host)"
            let outcome = await BoundedWait.value(within: .seconds(15)) { await sender.send(message, to: probeToken) }
            lines.append(probeLine(target, outcome))
        }
        return lines
    }

    /// What the answer to a probe push says of the credentials.
    static func probeLine(_ target: String, _ outcome: PushOutcome?) -> Line {
        switch outcome {
        case .tokenDead(let reason, _)?:
            return Line(target: target, ok: true, detail: "credentials accepted (a push to no device answered \(reason))")
        case .accepted?:
            return Line(target: target, ok: true, detail: "credentials accepted")
        case .failed(let reason)?:
            if let outcome, let apple = APNsResponse.keyRestriction(outcome) {
                let why = apple == "UnrelatedKeyIdInToken"
                    ? "the key is restricted to other topics than this app's apnsTopic"
                    : "the key is restricted to the other environment"
                return Line(target: target, ok: false, detail: "\(apple): \(why); use a key made for it (or unrestricted), or register these devices in the environment the key allows")
            }
            return Line(target: target, ok: false, detail: reason)
        case .refreshCredentials(let reason)?:
            return Line(target: target, ok: false, detail: "\(reason): APNs refused the provider token; check apnsKeyId, apnsTeamId and apnsKeyPath")
        case .retry(let reason, _, _)?:
            return Line(target: target, ok: false, detail: "not answered: \(reason)")
        case .expired?, .deferred?:
            return Line(target: target, ok: false, detail: "not sent")
        case nil:
            return Line(target: target, ok: false, detail: "no answer within 15 s")
        }
    }

    static func database(_ configuration: GatewayConfiguration, logger: Logger) async -> Line {
        let target = "database \(configuration.database.url.map(DatabaseURLRedaction.redacted) ?? "(dbUrl not set)")"
        do {
            let pool = try Gateway.openPool(configuration, size: 1, logger: logger)
            defer { pool.close() }
            let migrator = try Gateway.loadMigrator(configuration)
            let pending = try await migrator.pending(pool)
            return Line(target: target, ok: true, detail: pending.isEmpty
                ? "schema current, migration \(migrator.migrations.last?.version ?? 0)"
                : "reachable; migrations pending: \(pending.map(String.init).joined(separator: ", ")) (pigeon migrate, or serve, applies them)")
        } catch {
            return Line(target: target, ok: false, detail: "\(error)")
        }
    }

    /// The bank proxy's WSDL, fetched as the gateway would call the service (its CA, client
    /// certificate and credentials).
    static func bank(_ configuration: GatewayConfiguration, url: String) async -> Line {
        let target = "bank proxy \(Redaction.withoutCredentials(url))"
        do {
            let client = try Gateway.bankClient(configuration, url: url)
            defer { client.shutdown(abandonRunning: true) }
            var headers: [String: String] = [:]
            if let username = configuration.bankChannel.username {
                headers["Authorization"] = "Basic " + Data("\(username):\(configuration.bankChannel.password ?? "")".utf8).base64EncodedString()
            }
            let response = try await client.send(url: url + "?wsdl", method: "GET", headers: headers, body: Data())
            guard response.status == 200 else { return Line(target: target, ok: false, detail: "HTTP \(response.status) for its ?wsdl") }
            guard String(decoding: response.body.prefix(65_536), as: UTF8.self).contains("definitions") else {
                return Line(target: target, ok: false, detail: "its ?wsdl answered 200 with no WSDL")
            }
            return Line(target: target, ok: true, detail: "WSDL fetched, \(response.body.count) bytes")
        } catch {
            return Line(target: target, ok: false, detail: "\(error)")
        }
    }

    /// The push services' URLs of every configured app, by a name for the line.
    static func pushHosts(_ configuration: GatewayConfiguration) -> [(String, String)] {
        var hosts: [(String, String)] = []
        for (id, app) in configuration.pushApps {
            let label = id.isEmpty ? "" : " (app \(id))"
            if app.apns.isConfigured {
                hosts.append(("APNs\(label)", app.apns.resolvedEndpoint))
                hosts.append(("APNs sandbox\(label)", app.apns.resolvedSandboxEndpoint))
            }
            if app.fcm.serviceAccountPath != nil {
                hosts.append(("FCM\(label)", app.fcm.endpoint ?? "https://fcm.googleapis.com"))
                hosts.append(("FCM tokens\(label)", app.fcm.tokenEndpoint ?? "https://oauth2.googleapis.com/token"))
            }
            if app.rustore.isConfigured { hosts.append(("RuStore\(label)", app.rustore.resolvedEndpoint)) }
            if app.huawei.isConfigured {
                hosts.append(("Huawei Push Kit\(label)", app.huawei.resolvedEndpoint))
                hosts.append(("Huawei tokens\(label)", app.huawei.resolvedTokenEndpoint))
            }
        }
        return hosts
    }

    /// Whether `url`'s host resolves to an address (nothing is sent to it).
    static func resolve(_ name: String, url: String) -> Line {
        guard let host = URLComponents(string: url)?.host, !host.isEmpty else {
            return Line(target: "\(name) \(url)", ok: false, detail: "not a URL with a host")
        }
        let addresses = Host(name: host).addresses
        return addresses.isEmpty
            ? Line(target: "\(name) \(host)", ok: false, detail: "the name does not resolve")
            : Line(target: "\(name) \(host)", ok: true, detail: "resolves to \(addresses.prefix(3).joined(separator: ", "))")
    }
}
