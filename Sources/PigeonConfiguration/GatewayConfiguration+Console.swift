import Foundation
import PigeonCore

extension GatewayConfiguration {
    /// The operator console (CONTRACT §5, §10): operators' accounts in `consoleUsersFile`
    /// (`name:hash:role`), and/or the single `admin` of `consoleUsername`/`consolePassword`;
    /// served on `bankListen` (or on a loopback `listen` when there is no `bankListen`).
    package struct Console: Sendable {
        package var username: String?
        package var password: String?
        /// `consoleUsersFile`: one operator a line, `name:hash:role`; re-read on SIGHUP.
        package var usersFile: String?
        /// `auditRetentionDays`: the audit trail is kept this many days (365–3650; default 400).
        package var auditRetentionDays = 400
        /// `consoleLdap…`: operators in the bank's directory.
        package var ldap = Directory()
        package var isConfigured: Bool { (username != nil && password != nil) || usersFile != nil || ldap.isConfigured }

        /// The bank's directory (LDAP) for console sign-ins.
        package struct Directory: Sendable {
            /// `consoleLdapUrl`: `ldaps://host:port`, or `ldap://host:port` (StartTLS, unless loopback).
            package var url: String?
            /// `consoleLdapUserDn`: the user's DN with `{user}` for the name typed.
            package var userDNTemplate: String?
            /// `consoleLdapGroups`: `viewer=<DN>;support=<DN>;admin=<DN>` (at least one).
            package var groups: [(role: String, dn: String)] = []
            /// `consoleLdapCaFile`: the CA of the directory's certificate (PEM); default the system's.
            package var caFile: String?
            /// `consoleLdapTimeoutSeconds`: for the connection and each operation (1–30, default 5).
            package var timeoutSeconds = 5
            package var isConfigured: Bool { url != nil }
            /// StartTLS on an `ldap://` URL whose host is not loopback.
            package var startTLS: Bool {
                guard let url, url.lowercased().hasPrefix("ldap://") else { return false }
                let host = url.dropFirst("ldap://".count).prefix { $0 != "/" }
                let name = host.hasPrefix("[") ? String(host.dropFirst().prefix { $0 != "]" }) : String(host.prefix { $0 != ":" })
                return !GatewayConfiguration.isLoopback(name) && name != "localhost"
            }
        }
    }

    /// Whether the console can be served: configured, and on a listener that does not face
    /// phones (`bankListen`, or a loopback `listen` carrying everything).
    package var consoleIsServed: Bool {
        console.isConfigured && (http.bank != nil || Self.isLoopback(http.host))
    }

    /// The effective settings as the console shows them: every value that is a secret (passwords,
    /// tokens, client secrets, the database URL's password) redacted.
    package func effectiveSettings() -> [(key: String, value: String)] {
        let secret = Redaction.secret
        func shown(_ value: String?) -> String { value ?? "—" }
        func hidden(_ value: String?) -> String { value == nil ? "—" : secret }
        var settings: [(key: String, value: String)] = [
            ("listen", "\(http.host):\(http.port)"),
            ("bankListen", http.bank.map { "\($0.host):\($0.port)" } ?? "— (everything on listen)"),
            ("tlsCertificatePath", shown(http.tlsCertificatePath)), ("bankTlsCertificatePath", shown(http.bankTlsCertificatePath)),
            ("bankClientCaFile", shown(http.bankClientCaFile)),
            ("soapUsername", shown(http.soapUsername)), ("soapPassword", hidden(http.soapPassword)),
            ("consoleUsername", shown(console.username)), ("consolePassword", hidden(console.password)),
            ("consoleUsersFile", shown(console.usersFile)), ("auditRetentionDays", String(console.auditRetentionDays)),
            ("consoleLdapUrl", shown(console.ldap.url)), ("consoleLdapUserDn", shown(console.ldap.userDNTemplate)),
            ("consoleLdapGroups", console.ldap.groups.isEmpty ? "—" : console.ldap.groups.map { "\($0.role)=\($0.dn)" }.joined(separator: ";")),
            ("consoleLdapCaFile", shown(console.ldap.caFile)), ("consoleLdapTimeoutSeconds", String(console.ldap.timeoutSeconds)),
            ("maxRequestBytes", String(http.maxRequestBytes)), ("perAddressConnectionLimit", String(http.perAddressConnectionLimit)),
            ("requestDeadlineSeconds", String(http.requestDeadlineSeconds)),
            ("dbUrl", database.url.map(DatabaseURLRedaction.redacted) ?? "—"), ("dbUsername", shown(database.username)),
            ("dbPassword", hidden(database.password)), ("dbPoolSize", String(database.poolSize)),
            ("sbiOutboundWebServiceURL", shown(bankProxyURL.map(Redaction.withoutCredentials))), ("sbiOutboundUsername", shown(bankChannel.username)),
            ("sbiOutboundPassword", hidden(bankChannel.password)), ("sbiOutboundClientCertificatePath", shown(bankChannel.clientCertificatePath)),
            ("tlsCaFile", shown(tlsCaFile)),
            ("deliveryConcurrency", String(delivery.concurrency)), ("deliveryWorkers", String(delivery.workers)),
            ("retentionDays", String(retentionDays)), ("reportMaxAgeHours", String(reportMaxAgeHours)),
            ("overrideSubscriptions", String(overrideSubscriptions)), ("caseInsensitiveIds", String(caseInsensitiveIds)),
            ("passWebServicePath", passes.webServicePath), ("passFetchTimeoutSeconds", String(passes.fetchTimeoutSeconds)),
            ("passFetchRetries", String(passes.fetchRetries)),
        ]
        for (id, app) in pushApps {
            let prefix = id.isEmpty ? "" : "app.\(id)."
            settings += [
                ("\(prefix)apnsTopic", shown(app.apns.topic)), ("\(prefix)apnsEndpoint", app.apns.isConfigured ? app.apns.resolvedEndpoint : "—"),
                ("\(prefix)apnsKeyPath", shown(app.apns.keyPath)), ("\(prefix)apnsKeyId", shown(app.apns.keyId)),
                ("\(prefix)apnsCertificatePath", shown(app.apns.certificatePath)), ("\(prefix)apnsPassword", hidden(app.apns.password)),
                ("\(prefix)fcmServiceAccountPath", shown(app.fcm.serviceAccountPath)),
                ("\(prefix)rustoreProjectId", shown(app.rustore.projectId)), ("\(prefix)rustoreServiceToken", hidden(app.rustore.serviceToken)),
                ("\(prefix)hmsAppId", shown(app.huawei.appId)), ("\(prefix)hmsClientSecret", hidden(app.huawei.clientSecret)),
                ("\(prefix)hmsCategory", shown(app.huawei.codesCategory)),
                ("\(prefix)hmsCategories", app.huawei.categoriesByType.isEmpty ? "—" : app.huawei.categoriesByType.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")),
                ("\(prefix)vapidPrivateKeyPath", shown(app.webPush.vapidPrivateKeyPath)),
                ("\(prefix)webPushNavigate", shown(app.webPush.declarativeNavigate)), ("\(prefix)webPushTitle", app.webPush.declarativeTitle),
                ("\(prefix)webPushDeclarative", app.webPush.declarativeScope), ("\(prefix)webPushAppleHosts", app.webPush.appleHosts.patterns.joined(separator: ", ")),
            ]
        }
        for (identifier, certificate) in passes.certificates.sorted(by: { $0.key < $1.key }) {
            settings += [("passType.\(identifier).certificatePath", shown(certificate.path)), ("passType.\(identifier).password", hidden(certificate.password))]
        }
        // Every other key the file may set: its value as read (a secret redacted), or the default.
        let listed = Set(settings.map(\.key))
        for key in Self.keyNames where !listed.contains(key) {
            settings.append((key, readValues[key].map { Self.isSecret(key) ? secret : $0 } ?? "default"))
        }
        for (id, _) in pushApps where !id.isEmpty {
            for appKey in Self.appKeyNames where !listed.contains("app.\(id).\(appKey)") {
                let key = "app.\(id).\(appKey)"
                settings.append((key, readValues[key].map { Self.isSecret(appKey) ? secret : $0 } ?? "default"))
            }
        }
        return settings
    }

    /// Whether a key's value is a secret (never shown).
    static func isSecret(_ key: String) -> Bool {
        ["password", "secret", "token"].contains { key.lowercased().contains($0) }
    }
}

extension GatewayConfiguration {
    /// Whether the listener that serves the console speaks HTTPS (its cookie is then `Secure`):
    /// `bankListen`'s certificate, or `listen`'s when everything is served there.
    package var consoleListenerUsesTLS: Bool {
        (http.bank == nil ? http.tlsCertificatePath : http.bank?.tlsCertificatePath) != nil
    }
}
