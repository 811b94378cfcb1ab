import Foundation
import PigeonCore
import PigeonDomain
import PigeonHTTP
import PushCore

extension GatewayConfiguration {
    /// Reads `path`, then applies `PIGEON_<KEY>` environment overrides (the key as written, or
    /// upper-cased: `PIGEON_dbUrl` or `PIGEON_DBURL`), then checks the whole.
    package static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> GatewayConfiguration {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(location: path, message: "cannot read the configuration file (\(error.localizedDescription))")
        }
        return try parse(text: text, name: path, environment: environment)
    }

    /// Parses configuration text; `name` is used in error locations.
    package static func parse(text: String, name: String, environment: [String: String] = [:]) throws(ConfigurationError) -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        let file = try ConfigurationFile(text: text, name: name)
        for entry in file.entries {
            try configuration.apply(key: entry.key, value: entry.value, location: entry.location)
            configuration.readValues[entry.key] = entry.value
            configuration.keyLocations[entry.key] = entry.location
        }
        for key in Self.keys.keys.sorted() {
            for variable in ["PIGEON_\(key)", "PIGEON_\(key.uppercased())"] {
                if let value = environment[variable] {
                    try configuration.apply(key: key, value: value, location: "environment variable \(variable)")
                    configuration.readValues[key] = value
                    configuration.keyLocations[key] = "environment variable \(variable)"
                    break
                }
            }
        }
        try configuration.validate(location: name)
        return configuration
    }

    /// The keys whose value differs in `newer` (set, changed or removed), by name only.
    package func keysChanged(in newer: GatewayConfiguration) -> [String] {
        Set(readValues.keys).union(newer.readValues.keys).filter { readValues[$0] != newer.readValues[$0] }.sorted()
    }

    /// The error for a file `key` names that cannot be read — where the key was set, and why —
    /// or nil when it can be.
    func unreadableFile(key: String, path: String, location: String) -> ConfigurationError? {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        let reason: String
        if !manager.fileExists(atPath: path, isDirectory: &isDirectory) {
            reason = "no such file"
        } else if isDirectory.boolValue {
            reason = "it is a directory"
        } else if !manager.isReadableFile(atPath: path) {
            reason = "permission denied for this user (uid \(getuid()))"
        } else {
            return nil
        }
        return ConfigurationError(location: keyLocations[key] ?? location, message: "\(key): cannot read '\(path)': \(reason)")
    }

    /// Every key `server.conf` accepts.
    package static var keyNames: [String] { keys.keys.sorted() }
    /// Every key an app section (`app.<name>.<key>`) accepts.
    static var appKeyNames: [String] { appKeys.keys.sorted() }

    mutating func apply(key: String, value: String, location: String) throws(ConfigurationError) {
        if key == "gcmAuthKey" {
            throw ConfigurationError(
                location: location,
                message: "gcmAuthKey configured the legacy GCM/FCM API, which Google has shut down; set fcmServiceAccountPath (a service-account JSON) for FCM HTTP v1 instead, and optionally fcmEndpoint/fcmTokenEndpoint")
        }
        if key.hasPrefix("app.") {
            return try applyAppKey(key, value: value, location: location)
        }
        if key.hasPrefix("passType.") {
            return try applyPassTypeKey(key, value: value, location: location)
        }
        guard let setter = Self.keys[key] else {
            let hint = NearestKey.suggestion(for: key, among: Self.keys.keys).map { "; did you mean '\($0)'?" } ?? ""
            throw ConfigurationError(location: location, message: "unknown key '\(key)'\(hint)")
        }
        do {
            try setter(&self, value)
        } catch let error as ValueError {
            throw ConfigurationError(location: location, message: "\(key): \(error.message)")
        } catch {
            throw ConfigurationError(location: location, message: "\(key): \(error)")
        }
    }

    /// `app.<name>.<key> = value`: a push key of a named app.
    private mutating func applyAppKey(_ key: String, value: String, location: String) throws(ConfigurationError) {
        let parts = key.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw ConfigurationError(location: location, message: "'\(key)' must be app.<name>.<key>, e.g. app.business.apnsTopic")
        }
        let name = String(parts[1]), appKey = String(parts[2])
        if let problem = Self.appNameProblem(name) {
            throw ConfigurationError(location: location, message: "'\(key)': \(problem)")
        }
        guard let setter = Self.appKeys[appKey] else {
            throw ConfigurationError(
                location: location,
                message: "unknown key '\(appKey)' for app '\(name)'"
                    + (NearestKey.suggestion(for: appKey, among: Self.appKeys.keys).map { "; did you mean '\($0)'?" } ?? "")
                    + "; an app takes \(Self.appKeys.keys.sorted().joined(separator: ", "))")
        }
        var app = apps[name] ?? PushApp()
        do {
            try setter(&app, value)
        } catch let error as ValueError {
            throw ConfigurationError(location: location, message: "\(key): \(error.message)")
        } catch {
            throw ConfigurationError(location: location, message: "\(key): \(error)")
        }
        apps[name] = app
    }

    /// Why `name` cannot name an app, or nil: 1–64 letters, digits, `-` and `_`; `default` is
    /// the top-level keys' app.
    static func appNameProblem(_ name: String) -> String? {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        guard (1...64).contains(name.count), name.allSatisfy(allowed.contains) else {
            return "an app's name is 1 to 64 letters, digits, '-' or '_'"
        }
        guard name != "default" else { return "'default' is the app of the top-level keys; give the others another name" }
        return nil
    }

    /// Each app's own rules: its files readable, a signing key with its ids, a topic for APNs
    /// (every named app; token authentication needs it).
    private func validateApps(location: String) throws(ConfigurationError) {
        for (id, app) in pushApps {
            let prefix = id.isEmpty ? "" : "app.\(id)."
            func fail(_ message: String) -> ConfigurationError { ConfigurationError(location: location, message: message) }
            if (app.rustore.projectId == nil) != (app.rustore.serviceToken == nil) {
                throw fail("\(prefix)rustoreProjectId and \(prefix)rustoreServiceToken must be set together")
            }
            if (app.huawei.appId == nil) != (app.huawei.clientSecret == nil) {
                throw fail("\(prefix)hmsAppId and \(prefix)hmsClientSecret must be set together")
            }
            if app.webPush.isConfigured && (app.webPush.vapidSubject == nil || app.webPush.allowedHosts.patterns.isEmpty) {
                throw fail("\(prefix)vapidPrivateKeyPath needs \(prefix)vapidSubject and \(prefix)webPushAllowedHosts")
            }
            if !id.isEmpty && !app.configuresAService {
                throw fail("app '\(id)' configures no push service: give it \(prefix)apnsKeyPath (or \(prefix)apnsCertificatePath), \(prefix)fcmServiceAccountPath, \(prefix)rustoreProjectId, \(prefix)hmsAppId or \(prefix)vapidPrivateKeyPath")
            }
            for (key, path) in [("apnsCertificatePath", app.apns.certificatePath), ("apnsKeyPath", app.apns.keyPath),
                                ("fcmServiceAccountPath", app.fcm.serviceAccountPath), ("vapidPrivateKeyPath", app.webPush.vapidPrivateKeyPath)] {
                if let path, let problem = unreadableFile(key: prefix + key, path: path, location: location) { throw problem }
            }
            let endpoints = [("apnsEndpoint", app.apns.endpoint), ("apnsSandboxEndpoint", app.apns.sandboxEndpoint),
                             ("apnsChannelEndpoint", app.apns.channelEndpoint),
                             ("fcmEndpoint", app.fcm.endpoint), ("fcmTokenEndpoint", app.fcm.tokenEndpoint),
                             ("rustoreEndpoint", app.rustore.endpoint), ("hmsEndpoint", app.huawei.endpoint),
                             ("hmsTokenEndpoint", app.huawei.tokenEndpoint)]
            for case let (key, url?) in endpoints where !allowInsecurePushEndpoints && Self.isPlainRemote(url) {
                throw fail("\(prefix)\(key) must be https:// (plain http:// only to a loopback address, or with allowInsecurePushEndpoints = true): pushes carry their content and our credentials")
            }
            if app.apns.keyPath != nil && (app.apns.keyId == nil || app.apns.teamId == nil) {
                throw fail("\(prefix)apnsKeyPath needs \(prefix)apnsKeyId and \(prefix)apnsTeamId")
            }
            if !id.isEmpty && app.apns.isConfigured && app.apns.topic == nil {
                throw fail("app '\(id)' sends with APNs but has no \(prefix)apnsTopic (its bundle id)")
            }
        }
    }

    /// Cross-key rules and file checks.
    func validate(location: String) throws(ConfigurationError) {
        func fail(_ message: String) -> ConfigurationError { ConfigurationError(location: location, message: message) }
        // An example's placeholder left in a secret (deploy/kubernetes, server.conf.example):
        // a gateway that started with it would be protected by a password anyone can read.
        for (key, value) in readValues.sorted(by: { $0.key < $1.key })
        where (Self.isSecret(key) || key == "dbUrl") && value.lowercased().contains("change-me") {
            throw ConfigurationError(location: keyLocations[key] ?? location,
                                     message: "\(key) still holds the example's placeholder (CHANGE-ME): set a real secret")
        }
        if (http.tlsCertificatePath == nil) != (http.tlsKeyPath == nil) {
            throw fail("tlsCertificatePath and tlsKeyPath must be set together")
        }
        if (console.username == nil) != (console.password == nil) {
            throw fail("consoleUsername and consolePassword must be set together")
        }
        if console.ldap.url != nil || console.ldap.userDNTemplate != nil || !console.ldap.groups.isEmpty {
            guard console.ldap.url != nil, console.ldap.userDNTemplate != nil, !console.ldap.groups.isEmpty else {
                throw fail("consoleLdapUrl, consoleLdapUserDn and consoleLdapGroups must be set together")
            }
        }
        if (http.soapUsername == nil) != (http.soapPassword == nil) {
            throw fail("soapUsername and soapPassword must be set together")
        }
        if (http.bankTlsCertificatePath == nil) != (http.bankTlsKeyPath == nil) {
            throw fail("bankTlsCertificatePath and bankTlsKeyPath must be set together")
        }
        if http.bankAddress == nil && (http.bankTlsCertificatePath != nil || http.bankClientCaFile != nil) {
            throw fail("bankTlsCertificatePath, bankTlsKeyPath and bankClientCaFile configure bankListen, which is not set")
        }
        if http.bankAddress == nil && !http.bankAllowedClients.isEmpty {
            throw fail("bankAllowedClients limits who may connect to bankListen, which is not set (listen also serves phones)")
        }
        if http.bankClientCaFile != nil && http.bankTlsCertificatePath == nil {
            throw fail("bankClientCaFile needs HTTPS on bankListen (bankTlsCertificatePath and bankTlsKeyPath)")
        }
        if let bank = http.bankAddress, bank.host == http.host, bank.port == http.port, bank.port != 0 {
            throw fail("bankListen must differ from listen")
        }
        if http.soapIsUnauthenticated && !http.soapAuthenticationDisabled && !Self.isLoopback(http.soapHost) {
            throw fail("the SOAP service would be reachable on \(http.soapHost) without authentication: set soapUsername/soapPassword or bankClientCaFile (with bankListen), serve it on a loopback bankListen, or set soapAuthentication = none to accept this")
        }
        if (bankChannel.username == nil) != (bankChannel.password == nil) {
            throw fail("sbiOutboundUsername and sbiOutboundPassword must be set together")
        }
        if (bankChannel.clientCertificatePath == nil) != (bankChannel.clientKeyPath == nil) {
            throw fail("sbiOutboundClientCertificatePath and sbiOutboundClientKeyPath must be set together")
        }
        if let url = bankProxyURL, let problem = Self.insecureBankProblem(url, allowInsecure: bankChannel.allowInsecure) {
            throw fail(problem)
        }
        let files: [(String, String?)] = [
            ("tlsCertificatePath", http.tlsCertificatePath), ("tlsKeyPath", http.tlsKeyPath),
            ("bankTlsCertificatePath", http.bankTlsCertificatePath), ("bankTlsKeyPath", http.bankTlsKeyPath),
            ("bankClientCaFile", http.bankClientCaFile),
            ("sbiOutboundClientCertificatePath", bankChannel.clientCertificatePath),
            ("sbiOutboundClientKeyPath", bankChannel.clientKeyPath), ("sbiOutboundCaFile", bankChannel.caFile),
            ("tlsCaFile", tlsCaFile),
        ]
        for (key, path) in files {
            if let path, let problem = unreadableFile(key: key, path: path, location: location) { throw problem }
        }
        try validateApps(location: location)
        try validatePasses(location: location)
    }

    /// Whether `url` is plain `http://` to an address that is not this machine's.
    static func isPlainRemote(_ url: String) -> Bool {
        guard let parsed = URL(string: url), parsed.scheme?.lowercased() == "http" else { return false }
        return !(parsed.host.map(isLoopback) ?? false)
    }

    /// Why `url` may not carry the bank channel: `http://` to anything but a loopback address
    /// needs `allowInsecureBank = true`.
    static func insecureBankProblem(_ url: String, allowInsecure: Bool) -> String? {
        guard !allowInsecure, let parsed = URL(string: url), parsed.scheme?.lowercased() == "http" else { return nil }
        if let host = parsed.host, isLoopback(host) { return nil }
        return "sbiOutboundWebServiceURL must be https:// (plain http:// only to a loopback address, or with allowInsecureBank = true): the bank channel carries users' ids and SMS codes"
    }

    /// Whether `host` (an address or `localhost`) is only reachable from this machine.
    /// Decided on the parsed address, never on a prefix of the text (`127.evil.example` is a
    /// name, not a loopback address): `localhost`, an IPv4 address in 127.0.0.0/8, `::1`, or
    /// 127.0.0.0/8 mapped into IPv6 (`::ffff:127.0.0.1`).
    package static func isLoopback(_ host: String) -> Bool {
        let bare = (host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host).lowercased()
        if bare == "localhost" { return true }
        if let octets = ipv4Octets(bare) { return octets[0] == 127 }
        if bare.hasPrefix("::ffff:"), let octets = ipv4Octets(String(bare.dropFirst(7))) { return octets[0] == 127 }
        return ipv6Groups(bare) == [0, 0, 0, 0, 0, 0, 0, 1]
    }

    /// The eight groups of an IPv6 address written in hexadecimal groups (with at most one `::`),
    /// or nil when `text` is not one.
    private static func ipv6Groups(_ text: String) -> [UInt16]? {
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            let values = part.split(separator: ":", omittingEmptySubsequences: false).map { group -> UInt16? in
                (1...4).contains(group.count) && group.allSatisfy(\.isHexDigit) ? UInt16(group, radix: 16) : nil
            }
            return values.contains(nil) ? nil : values.compactMap { $0 }
        }
        guard let head = groups(halves[0]) else { return nil }
        guard halves.count == 2 else { return head.count == 8 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count < 8 else { return nil }
        return head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    }

    /// The four octets of a dotted-decimal IPv4 address, or nil when `text` is not exactly one.
    private static func ipv4Octets(_ text: String) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let octets = parts.compactMap { part -> Int? in
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber), let value = Int(part), value <= 255 else { return nil }
            return value
        }
        return octets.count == 4 ? octets : nil
    }

    /// Why a value was refused.
    struct ValueError: Error {
        var message: String
    }

    private typealias Setter = @Sendable (inout GatewayConfiguration, String) throws -> Void

    private typealias AppSetter = @Sendable (inout PushApp, String) throws -> Void

    /// The keys of one app's push services: top-level for the default app, `app.<name>.<key>`
    /// for the others.
    private static let appKeys: [String: AppSetter] = [
        "apnsCertificatePath": { $0.apns.certificatePath = try nonEmpty($1) },
        "apnsPassword": { $0.apns.password = $1 },
        "apnsIsProduction": { $0.apns.isProduction = try boolean($1) },
        "apnsEndpoint": { $0.apns.endpoint = try url($1) },
        "apnsSandboxEndpoint": { $0.apns.sandboxEndpoint = try url($1) },
        "apnsChannelEndpoint": { $0.apns.channelEndpoint = try url($1) },
        "apnsTopic": { $0.apns.topic = try nonEmpty($1) },
        "apnsKeyPath": { $0.apns.keyPath = try nonEmpty($1) },
        "apnsKeyId": { $0.apns.keyId = try nonEmpty($1) },
        "apnsTeamId": { $0.apns.teamId = try nonEmpty($1) },
        "fcmServiceAccountPath": { $0.fcm.serviceAccountPath = try nonEmpty($1) },
        "fcmEndpoint": { $0.fcm.endpoint = try url($1) },
        "fcmTokenEndpoint": { $0.fcm.tokenEndpoint = try url($1) },
        "fcmMessagesPerMinute": { $0.fcm.messagesPerMinute = try integer($1, in: 1...100_000_000) },
        "rustoreProjectId": { $0.rustore.projectId = try nonEmpty($1) },
        "rustoreServiceToken": { $0.rustore.serviceToken = try nonEmpty($1) },
        "rustoreEndpoint": { $0.rustore.endpoint = try url($1) },
        "hmsAppId": { $0.huawei.appId = try nonEmpty($1) },
        "hmsClientSecret": { $0.huawei.clientSecret = try nonEmpty($1) },
        "hmsEndpoint": { $0.huawei.endpoint = try url($1) },
        "hmsTokenEndpoint": { $0.huawei.tokenEndpoint = try url($1) },
        "hmsCategory": { app, value in
            guard HuaweiCategories.known.contains(value) else {
                throw ValueError(message: "'\(value)' is not a Push Kit category (\(HuaweiCategories.known.sorted().joined(separator: ", ")))")
            }
            app.huawei.codesCategory = value
        },
        "hmsCategories": { app, value in
            var categories: [String: String] = [:]
            for part in value.split(separator: ",") {
                let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pair.count == 2, PushType(rawValue: pair[0]) != nil, HuaweiCategories.known.contains(pair[1]), categories[pair[0]] == nil else {
                    throw ValueError(message: "write TYPE=CATEGORY, … with a notification type (PIN_CODE, UNIVERSAL, …) and a Push Kit category (\(HuaweiCategories.known.sorted().joined(separator: ", ")))")
                }
                categories[pair[0]] = pair[1]
            }
            app.huawei.categoriesByType = categories
        },
        "vapidPrivateKeyPath": { $0.webPush.vapidPrivateKeyPath = try nonEmpty($1) },
        "vapidSubject": { configuration, value in
            guard value.hasPrefix("mailto:") || value.hasPrefix("https:") else {
                throw ValueError(message: "'\(value)' must be a mailto: or https: contact (RFC 8292)")
            }
            configuration.webPush.vapidSubject = value
        },
        "webPushNavigate": { configuration, value in
            guard value.lowercased().hasPrefix("https://"), value.count > 8, value.utf8.count <= 2_048, !value.contains(" ") else {
                throw ValueError(message: "'\(value)' is not an https:// URL")
            }
            configuration.webPush.declarativeNavigate = value
        },
        "webPushTitle": { configuration, value in
            guard (1...100).contains(value.count), !ControlCharacters.present(in: value) else { throw ValueError(message: "must be 1–100 characters") }
            configuration.webPush.declarativeTitle = value
        },
        "webPushDeclarative": { configuration, value in
            guard ["apple", "all", "off"].contains(value) else { throw ValueError(message: "'\(value)' is not apple, all or off") }
            configuration.webPush.declarativeScope = value
        },
        "webPushAppleHosts": { $0.webPush.appleHosts = try webPushHosts($1) },
        "webPushAllowedHosts": { configuration, value in
            configuration.webPush.allowedHosts = try webPushHosts(value)
        },
    ]

    private static let keys: [String: Setter] = generalKeys.merging(
        appKeys.mapValues { set -> Setter in { @Sendable configuration, value in try set(&configuration.defaultApp, value) } },
        uniquingKeysWith: { general, _ in general })

    private static let generalKeys: [String: Setter] = [
        "listen": { configuration, value in
            let (host, port) = try parseListen(value)
            configuration.http.host = host
            configuration.http.port = port
        },
        "tlsCertificatePath": { $0.http.tlsCertificatePath = try nonEmpty($1) },
        "tlsKeyPath": { $0.http.tlsKeyPath = try nonEmpty($1) },
        "bankListen": { configuration, value in
            let (host, port) = try parseListen(value)
            configuration.http.bankAddress = (host, port)
        },
        "bankTlsCertificatePath": { $0.http.bankTlsCertificatePath = try nonEmpty($1) },
        "bankTlsKeyPath": { $0.http.bankTlsKeyPath = try nonEmpty($1) },
        "bankClientCaFile": { $0.http.bankClientCaFile = try nonEmpty($1) },
        "soapAuthentication": { configuration, value in
            switch value.lowercased() {
            case "none": configuration.http.soapAuthenticationDisabled = true
            case "required": configuration.http.soapAuthenticationDisabled = false
            default: throw ValueError(message: "'\(value)' is not 'required' or 'none'")
            }
        },
        "soapUsername": { $0.http.soapUsername = try nonEmpty($1) },
        "consoleUsername": { $0.console.username = try nonEmpty($1) },
        "consoleUsersFile": { $0.console.usersFile = try nonEmpty($1) },
        "auditRetentionDays": { $0.console.auditRetentionDays = try integer($1, in: 365...3650) },
        "consoleLdapUrl": { configuration, value in
            let lowered = value.lowercased()
            guard lowered.hasPrefix("ldaps://") || lowered.hasPrefix("ldap://"), value.count > 8, !value.contains(" ") else {
                throw ValueError(message: "'\(value)' is not an ldaps:// or ldap:// URL")
            }
            configuration.console.ldap.url = value
        },
        "consoleLdapUserDn": { configuration, value in
            guard value.contains("{user}"), value.contains("=") else { throw ValueError(message: "must be a DN with {user}, e.g. uid={user},ou=people,dc=bank,dc=example") }
            configuration.console.ldap.userDNTemplate = value
        },
        "consoleLdapGroups": { configuration, value in
            var groups: [(role: String, dn: String)] = []
            for part in value.split(separator: ";") {
                let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pair.count == 2, ["viewer", "support", "admin"].contains(pair[0]), pair[1].contains("="),
                      !groups.contains(where: { $0.role == pair[0] }) else {
                    throw ValueError(message: "write viewer=<group DN>;support=<group DN>;admin=<group DN> (each role at most once)")
                }
                groups.append((pair[0], pair[1]))
            }
            guard !groups.isEmpty else { throw ValueError(message: "name at least one role's group") }
            configuration.console.ldap.groups = groups
        },
        "consoleLdapCaFile": { $0.console.ldap.caFile = try nonEmpty($1) },
        "consoleLdapTimeoutSeconds": { $0.console.ldap.timeoutSeconds = try integer($1, in: 1...30) },
        "consolePassword": { configuration, value in
            guard value.count >= 12 else { throw ValueError(message: "must be at least 12 characters") }
            configuration.console.password = value
        },
        "soapPassword": { $0.http.soapPassword = try nonEmpty($1) },
        "maxRequestBytes": { $0.http.maxRequestBytes = try integer($1, in: 1024...(1 << 30)) },
        "httpConnectionLimit": { $0.http.connectionLimit = try integer($1, in: 1...1_000_000) },
        "bankConnectionLimit": { $0.http.bankConnectionLimit = try integer($1, in: 1...100_000) },
        "bankPerAddressConnectionLimit": { $0.http.bankPerAddressConnectionLimit = try integer($1, in: 0...100_000) },
        "bankAllowedClients": { $0.http.bankAllowedClients = try networks($1) },
        "bankUnauthenticatedConnectionLimit": { $0.http.bankUnauthenticatedConnectionLimit = try integer($1, in: 1...100_000) },
        "perAddressConnectionLimit": { $0.http.perAddressConnectionLimit = try integer($1, in: 0...1_000_000) },
        "httpIdleTimeoutSeconds": { $0.http.idleTimeoutSeconds = try integer($1, in: 1...3600) },
        "requestDeadlineSeconds": { $0.http.requestDeadlineSeconds = try integer($1, in: 1...3600) },
        "registrationsPerAddressPerMinute": { $0.deviceLimits.registrationsPerAddressPerMinute = try integer($1, in: 0...1_000_000) },
        "registrationsPerUserPerHour": { $0.deviceLimits.registrationsPerUserPerHour = try integer($1, in: 0...1_000_000) },
        "verificationAttempts": { $0.deviceLimits.verificationAttempts = try integer($1, in: 1...100) },
        "verificationWindowMinutes": { $0.deviceLimits.verificationWindowMinutes = try integer($1, in: 1...10_080) },
        "allowInsecureBank": { $0.bankChannel.allowInsecure = try boolean($1) },
        "sbiOutboundUsername": { $0.bankChannel.username = try nonEmpty($1) },
        "sbiOutboundPassword": { $0.bankChannel.password = try nonEmpty($1) },
        "sbiOutboundClientCertificatePath": { $0.bankChannel.clientCertificatePath = try nonEmpty($1) },
        "sbiOutboundClientKeyPath": { $0.bankChannel.clientKeyPath = try nonEmpty($1) },
        "sbiOutboundCaFile": { $0.bankChannel.caFile = try nonEmpty($1) },
        "dbUrl": { $0.database.url = try nonEmpty($1) },
        "dbUsername": { $0.database.username = try nonEmpty($1) },
        "dbPassword": { $0.database.password = $1 },
        "dbPoolSize": { $0.database.poolSize = try integer($1, in: 1...200) },
        "dbStatementTimeoutMillis": { $0.database.statementTimeoutMilliseconds = try integer($1, in: 0...3_600_000) },
        "migrationsPath": { $0.database.migrationsPath = try nonEmpty($1) },
        "tlsCaFile": { $0.tlsCaFile = try nonEmpty($1) },
        "allowInsecurePushEndpoints": { $0.allowInsecurePushEndpoints = try boolean($1) },
        "sbiOutboundWebServiceURL": { $0.bankProxyURL = try url($1) },
        "reportMaxAgeHours": { $0.reportMaxAgeHours = try integer($1, in: 1...8760) },
        "retentionDays": { $0.retentionDays = try integer($1, in: 1...3650) },
        "bankProxyTimeoutSeconds": { $0.bankProxyTimeoutSeconds = try integer($1, in: 1...300) },
        "authTokenLifetimeSeconds": { $0.authTokenLifetimeSeconds = try integer($1, in: 60...31_622_400) },
        "overrideSubscriptions": { $0.overrideSubscriptions = try boolean($1) },
        "caseInsensitiveIds": { $0.caseInsensitiveIds = try boolean($1) },
        "deviceExpiredPeriodMillis": { $0.deviceExpiredPeriodMillis = Int64(try integer($1, in: 1...Int(Int64.max))) },
        "expirySweepIntervalSeconds": { $0.expirySweepIntervalSeconds = try integer($1, in: 1...86_400) },
        "deliveryBatchSize": { $0.delivery.batchSize = try integer($1, in: 1...10_000) },
        "deliveryLeaseSeconds": { $0.delivery.leaseSeconds = try integer($1, in: 2...3600) },
        "deliveryConcurrency": { $0.delivery.concurrency = try integer($1, in: 1...10_000) },
        "deliveryWorkers": { $0.delivery.workers = try integer($1, in: 1...64) },
        "pushConnections": { $0.delivery.connections = try integer($1, in: 1...64) },
        "apnsConnections": { $0.delivery.apnsConnections = try integer($1, in: 1...64) },
        "pushThreads": { $0.delivery.pushThreads = try integer($1, in: 1...64) },
        "urgentPriority": { $0.delivery.urgentPriority = try integer($1, in: 1...1_000_000) },
        "shutdownGraceSeconds": { $0.delivery.shutdownGraceSeconds = try integer($1, in: 0...600) },
        "passWebServicePath": { $0.passes.webServicePath = try passWebServicePath($1) },
        "passFetchTimeoutSeconds": { $0.passes.fetchTimeoutSeconds = try integer($1, in: 1...604_800) },
        "passWwdrCertificatePath": { $0.passes.wwdrCertificatePath = try nonEmpty($1) },
        "passFetchRetries": { $0.passes.fetchRetries = try integer($1, in: 0...100) },
        "passRegistrationsPerDevice": { $0.passes.registrationsPerDevice = try integer($1, in: 1...100_000) },
        "passRegistrationsPerPass": { $0.passes.registrationsPerPass = try integer($1, in: 1...100_000) },
        "passRequestsPerAddressPerMinute": { $0.passes.requestsPerAddressPerMinute = try integer($1, in: 0...1_000_000) },
        "confidentialTypes": { $0.confidential.types = try pushTypes($1) },
        "confidentialAlertText": { $0.confidential.alertText = try confidentialAlertText($1) },
        "logLevel": { configuration, value in
            guard let level = Logger.Level(name: value) else {
                throw ValueError(message: "'\(value)' is not one of \(Logger.Level.allCases.map { "\($0)" }.joined(separator: ", "))")
            }
            configuration.logLevel = level
        },
    ]

    /// A comma-separated list of push types (`PIN_CODE, URL`); empty for none.
    private static func pushTypes(_ value: String) throws(ValueError) -> Set<PushType> {
        var types = Set<PushType>()
        for name in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            guard let type = PushType(rawValue: name) else {
                throw ValueError(message: "'\(name)' is not a push type: \(PushType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            types.insert(type)
        }
        return types
    }

    /// A comma-separated list of client networks (`10.20.0.0/16, 192.0.2.7, 2001:db8::/48`).
    private static func networks(_ value: String) throws(ValueError) -> [IPNetwork] {
        var networks: [IPNetwork] = []
        for text in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !text.isEmpty {
            do {
                networks.append(try IPNetwork(text))
            } catch {
                throw ValueError(message: error.description)
            }
        }
        guard !networks.isEmpty, networks.count <= 1_000 else {
            throw ValueError(message: "list 1 to 1,000 addresses or networks (a.b.c.d/n, IPv6 prefixes), comma-separated")
        }
        return networks
    }

    /// The neutral alert: shown on the lock screen, so short and without control characters.
    private static func confidentialAlertText(_ value: String) throws(ValueError) -> String {
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty, value.utf8.count <= 200, !ControlCharacters.present(in: value) else {
            throw ValueError(message: "must be 1 to 200 bytes of text without control characters")
        }
        return value
    }

    /// Host names or `*.domain` patterns, each with `:port` when not 443, comma-separated.
    private static func webPushHosts(_ value: String) throws(ValueError) -> WebPushHosts {
        let hosts = WebPushHosts(list: value)
        let wellFormed = hosts.patterns.allSatisfy { pattern in
            let parts = pattern.split(separator: ":", omittingEmptySubsequences: false)
            guard let name = parts.first, !name.isEmpty, !name.contains("/"), name != "*", name != "*." else { return false }
            return parts.count == 1 || (parts.count == 2 && UInt16(parts[1]) != nil)
        }
        guard !hosts.patterns.isEmpty, wellFormed else {
            throw ValueError(message: "'\(value)' must be host names or *.domain patterns, each with :port when not 443, comma-separated")
        }
        return hosts
    }

    private static func nonEmpty(_ value: String) throws(ValueError) -> String {
        guard !value.isEmpty else { throw ValueError(message: "must not be empty") }
        return value
    }

    private static func boolean(_ value: String) throws(ValueError) -> Bool {
        // Only true and false (as Java's properties read them): `yes`, `on` or `1` in a file
        // another tool wrote would otherwise mean what the operator cannot see.
        switch value.lowercased() {
        case "true": return true
        case "false": return false
        default: throw ValueError(message: "'\(value)' is not a boolean: write true or false")
        }
    }

    private static func integer(_ value: String, in range: ClosedRange<Int>) throws(ValueError) -> Int {
        guard let number = Int(value.replacingOccurrences(of: "_", with: "")) else {
            throw ValueError(message: "'\(value)' is not a whole number")
        }
        guard range.contains(number) else {
            throw ValueError(message: "\(number) is outside \(range.lowerBound)…\(range.upperBound)")
        }
        return number
    }

    private static func url(_ value: String) throws(ValueError) -> String {
        guard let parsed = URL(string: value), let scheme = parsed.scheme?.lowercased(),
              scheme == "http" || scheme == "https", parsed.host != nil
        else {
            throw ValueError(message: "'\(value)' is not an http(s) URL")
        }
        return value.hasSuffix("/") ? String(value.dropLast()) : value
    }

    /// `host:port`, `[ipv6]:port` or `:port` (all IPv4 interfaces).
    static func parseListen(_ value: String) throws(ValueError) -> (String, UInt16) {
        guard let colon = value.lastIndex(of: ":"), let port = UInt16(value[value.index(after: colon)...]) else {
            throw ValueError(message: "'\(value)' must be host:port, e.g. 127.0.0.1:8080")
        }
        var host = String(value[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "0.0.0.0" }
        if host == "localhost" { host = "127.0.0.1" }
        return (host, port)
    }
}
