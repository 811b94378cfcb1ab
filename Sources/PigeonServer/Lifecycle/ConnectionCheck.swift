import Foundation
import OutboundHTTP
import PigeonConfiguration
import PigeonCore
import PigeonStore

/// `pigeon check-config --connect`: what a configuration reaches, each a line OK or FAILED with
/// the reason — the database (and whether migrations are pending), the bank proxy's WSDL, and the
/// address of every push service host the configured apps use.
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
        return lines
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
