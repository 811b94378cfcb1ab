import Foundation
@testable import PigeonBankService
@testable import PigeonConfiguration
import PigeonCore
import Testing
import PigeonTestSupport

@Suite("server.conf", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConfigurationTests {
    @Test("the shipped example is valid")
    func example() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("server.conf.example").path
        let configuration = try GatewayConfiguration.load(path: path, environment: [:])
        #expect(configuration.http.host == "127.0.0.1")
        #expect(configuration.http.port == 8080)
        #expect(configuration.http.maxRequestBytes == 1_048_576)
        #expect(configuration.deviceExpiredPeriodMillis == 2_592_000_000)
    }

    @Test("the original deployment's keys are read, JDBC URL included")
    func originalKeys() throws {
        let text = """
            # from the Tomcat context
            dbUrl = jdbc:postgresql://localhost/pigeon
            dbUsername = test
            dbPassword = "pass # with hash"
            apnsIsProduction = true
            overrideSubscriptions = true
            caseInsensitiveIds = true
            deviceExpiredPeriodMillis = 1000
            sbiOutboundWebServiceURL = http://127.0.0.1:9/stub/
            """
        let configuration = try GatewayConfiguration.parse(text: text, name: "server.conf")
        #expect(configuration.database.url == "jdbc:postgresql://localhost/pigeon")
        #expect(configuration.database.password == "pass # with hash")
        #expect(configuration.apns.isProduction)
        #expect(configuration.apns.resolvedEndpoint == "https://api.push.apple.com")
        #expect(configuration.overrideSubscriptions && configuration.caseInsensitiveIds)
        #expect(configuration.bankProxyURL == "http://127.0.0.1:9/stub")
    }

    @Test("errors name the file and line", arguments: [
        ("listen = 127.0.0.1:8080\nbogusKey = 1", "server.conf:2: unknown key 'bogusKey'"),
        ("\n\ncaseInsensitiveIds = perhaps", "server.conf:3: caseInsensitiveIds: 'perhaps' is not a boolean"),
        ("maxRequestBytes = lots", "server.conf:1: maxRequestBytes: 'lots' is not a whole number"),
        ("listen = nowhere", "server.conf:1: listen: 'nowhere' must be host:port"),
        ("no equals sign here", "server.conf:1: expected 'key = value'"),
        ("dbPoolSize = 2\ndbPoolSize = 3", "server.conf:2: 'dbPoolSize' is already set at server.conf:1"),
        ("fcmEndpoint = ftp://x", "server.conf:1: fcmEndpoint: 'ftp://x' is not an http(s) URL"),
        ("tlsCertificatePath = /etc/hostname", "tlsCertificatePath and tlsKeyPath must be set together"),
        ("apnsKeyPath = /no/such/file.p8\napnsKeyId = A\napnsTeamId = B", "server.conf:1: apnsKeyPath: cannot read '/no/such/file.p8': no such file"),
        ("listen = 127.0.0.1:8080\ntlsCaFile = /tmp", "server.conf:2: tlsCaFile: cannot read '/tmp': it is a directory"),
        ("app.business.apnsTopic = t\napp.business.fcmServiceAccountPath = /no/account.json", "server.conf:2: app.business.fcmServiceAccountPath: cannot read '/no/account.json': no such file"),
        ("logLevel = info\npushThreads = 0", "server.conf:2: pushThreads: 0 is outside 1…64"),
        ("pushThreads = 65", "server.conf:1: pushThreads: 65 is outside 1…64"),
        ("apnsConnections = 0", "server.conf:1: apnsConnections: 0 is outside 1…64"),
        // Found by fuzzing: a pass-type key with no field after the prefix trapped the parser.
        ("passType.ubscriptions = false", "must be passType.<passTypeIdentifier>.certificatePath or .password"),
        ("passType. = x", "must be passType.<passTypeIdentifier>.certificatePath or .password"),
        ("urgentPriority = 0", "server.conf:1: urgentPriority: 0 is outside 1…1000000"),
        ("urgentPriority = high", "server.conf:1: urgentPriority: 'high' is not a whole number"),
        ("fcmMessagesPerMinute = 0", "server.conf:1: fcmMessagesPerMinute: 0 is outside 1…100000000"),
        ("app.business.fcmMessagesPerMinute = -5", "server.conf:1: app.business.fcmMessagesPerMinute: -5 is outside 1…100000000"),
        // A typo names the key meant; a key far from any names none.
        ("dbPoolSzie = 4", "server.conf:1: unknown key 'dbPoolSzie'; did you mean 'dbPoolSize'?"),
        ("apnstopic = com.bank.app", "unknown key 'apnstopic'; did you mean 'apnsTopic'?"),
        ("app.business.apnsTopik = x", "unknown key 'apnsTopik' for app 'business'; did you mean 'apnsTopic'?"),
        ("confidentialType = PIN_CODE", "unknown key 'confidentialType'; did you mean 'confidentialTypes'?"),
        ("confidentialTypes = PIN_CODE, SECRET", "confidentialTypes: 'SECRET' is not a push type"),
        ("confidentialAlertText = ", "confidentialAlertText: must be 1 to 200 bytes"),
    ])
    func errors(text: String, expected: String) {
        if expected.hasPrefix("server.conf:2: unknown key 'bogusKey'") {
            #expect(NearestKey.suggestion(for: "bogusKey", among: GatewayConfiguration.keyNames) == nil)
        }
        #expect {
            try GatewayConfiguration.parse(text: text, name: "server.conf")
        } throws: { error in
            (error as? ConfigurationError)?.description.contains(expected) ?? false
        }
    }

    @Test("gcmAuthKey is refused with a pointer to the FCM v1 keys")
    func legacyGCM() {
        #expect {
            try GatewayConfiguration.parse(text: "gcmAuthKey = AAAA", name: "server.conf")
        } throws: { error in
            let text = (error as? ConfigurationError)?.description ?? ""
            return text.hasPrefix("server.conf:1:") && text.contains("fcmServiceAccountPath")
        }
    }

    @Test("PIGEON_<KEY> environment variables override the file")
    func environment() throws {
        let configuration = try GatewayConfiguration.parse(
            text: "listen = 127.0.0.1:8080\ndbPoolSize = 2", name: "server.conf",
            environment: ["PIGEON_LISTEN": "127.0.0.1:9999", "PIGEON_dbPoolSize": "5"])
        #expect(configuration.http.port == 9999)
        #expect(configuration.database.poolSize == 5)
        #expect {
            try GatewayConfiguration.parse(text: "", name: "server.conf", environment: ["PIGEON_DBPOOLSIZE": "zero"])
        } throws: { error in
            (error as? ConfigurationError)?.description.hasPrefix("environment variable PIGEON_DBPOOLSIZE:") ?? false
        }
    }

    @Test("a re-read names the keys set, changed or removed since (environment overrides included), never their values")
    func keysChanged() throws {
        let running = try GatewayConfiguration.parse(
            text: "dbPoolSize = 2\nsoapUsername = bank\nsoapPassword = secret-one\nretentionDays = 30\nlogLevel = info", name: "server.conf")
        let newer = try GatewayConfiguration.parse(
            text: "dbPoolSize = 2\nsoapUsername = bank\nsoapPassword = secret-two\nlogLevel = debug\nexpirySweepIntervalSeconds = 10",
            name: "server.conf", environment: ["PIGEON_DBPOOLSIZE": "4"])
        let changed = running.keysChanged(in: newer)
        #expect(changed == ["dbPoolSize", "expirySweepIntervalSeconds", "logLevel", "retentionDays", "soapPassword"])
        #expect(!changed.joined().contains("secret"))
        #expect(running.keysChanged(in: running).isEmpty)
    }

    @Test("passwords never appear in the printed database URL")
    func redaction() {
        #expect(DatabaseURLRedaction.redacted("postgresql://u:secret@h/d") == "postgresql://u:<redacted>@h/d")
        #expect(DatabaseURLRedaction.redacted("jdbc:postgresql://h/d?user=u&password=secret") == "jdbc:postgresql://h/d?user=u&password=<redacted>")
        for url in ["postgresql://u:secret@h/d?password=secret&sslpassword=secret", "host=h password=secret dbname=d",
                    "host=h password = 'sec ret\\'s' dbname=d", "jdbc:postgresql://h/d?PASSWORD=secret&ssl=true",
                    "postgresql://u:secret@h1:5432,h2:5432/d?target_session_attrs=read-write"] {
            let redacted = DatabaseURLRedaction.redacted(url)
            #expect(!redacted.contains("secret") && !redacted.contains("sec ret"), "\(redacted)")
        }
    }

    @Test("loopback is decided on the parsed address, never on a prefix of the text")
    func loopbackAddresses() {
        for host in ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "0:0:0:0:0:0:0:1", "0::1", "::ffff:127.0.0.1", "[::FFFF:127.0.0.9]"] {
            #expect(GatewayConfiguration.isLoopback(host), "\(host)")
        }
        for host in ["127.evil.example", "127.0.0.1.evil.example", "127.0.0.256", "127.0.0", "1127.0.0.1", "::2", "::1:1", "::ffff:10.0.0.1",
                     "0.0.0.0", "10.0.0.1", "::", "1::1", "localhost.evil.example", ""] {
            #expect(!GatewayConfiguration.isLoopback(host), "\(host)")
        }
        #expect(GatewayConfiguration.insecureBankProblem("http://127.evil.example/bank", allowInsecure: false) != nil)
        #expect(GatewayConfiguration.insecureBankProblem("http://127.0.0.1:9/bank", allowInsecure: false) == nil)
    }

    @Test("user:password@ in sbiOutboundWebServiceURL never shows: not in the outbound WSDL, not on the console's configuration page")
    func bankURLCredentialsHidden() throws {
        let configuration = try GatewayConfiguration.parse(
            text: "sbiOutboundWebServiceURL = https://proxy-user:url-secret-77@bank.example:8443/sbi/outbound\n", name: "server.conf")
        let settings = configuration.effectiveSettings()
        #expect(!settings.contains { $0.value.contains("url-secret-77") || $0.value.contains("proxy-user") })
        #expect(settings.contains { $0.key == "sbiOutboundWebServiceURL" && $0.value == "https://bank.example:8443/sbi/outbound" })
        let wsdl = String(decoding: OutboundWSDL(bankProxyURL: configuration.bankProxyURL).response().body, as: UTF8.self)
        #expect(!wsdl.contains("url-secret-77"))
        #expect(wsdl.contains("https://bank.example:8443/sbi/outbound"))
        #expect(Redaction.withoutCredentials("not a url at all") == "not a url at all")
    }

    @Test("the console's effective settings list every key server.conf accepts (and every app key of each app), secrets redacted")
    func everyKeyListed() throws {
        let configuration = try GatewayConfiguration.parse(text: """
            hmsAppId = 123456
            hmsClientSecret = hms-secret-0123
            app.business.rustoreServiceToken = rustore-secret-4567
            app.business.rustoreProjectId = project-9
            retentionDays = 12
            confidentialTypes = PIN_CODE
            logLevel = debug
            """, name: "server.conf")
        let settings = configuration.effectiveSettings()
        let keys = Set(settings.map(\.key))
        let missing = GatewayConfiguration.keyNames.filter { !keys.contains($0) && $0 != "gcmAuthKey" }
        #expect(missing.isEmpty, "not listed: \(missing)")
        #expect(GatewayConfiguration.appKeyNames.allSatisfy { keys.contains("app.business.\($0)") })
        #expect(!settings.contains { $0.value.contains("secret-") }, "a secret shown")
        #expect(settings.contains { $0.key == "confidentialTypes" && $0.value == "PIN_CODE" })
        #expect(settings.contains { $0.key == "logLevel" && $0.value == "debug" })
        #expect(settings.contains { $0.key == "urgentPriority" && $0.value == "default" })
        #expect(Set(settings.map(\.key)).count == settings.count, "each key once")
    }

    @Test("plain HTTP on an address other machines reach, and SOAP without a credential, are warned about; loopback and HTTPS are not")
    func exposureWarnings() throws {
        func warnings(_ text: String) throws -> [String] {
            try GatewayConfiguration.parse(text: text, name: "server.conf").exposureWarnings.map(\.address)
        }
        #expect(try warnings("listen = 127.0.0.1:8080\n").isEmpty)
        #expect(try warnings("listen = [::1]:8080\n").isEmpty)
        #expect(try warnings("listen = 0.0.0.0:8080\nbankListen = 127.0.0.1:8081\n") == ["0.0.0.0:8080"])
        let pem = FileManager.default.temporaryDirectory.appendingPathComponent("exposure-\(getpid()).pem")
        try Data("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n".utf8).write(to: pem)
        defer { try? FileManager.default.removeItem(at: pem) }
        #expect(try warnings("listen = 0.0.0.0:8080\ntlsCertificatePath = \(pem.path)\ntlsKeyPath = \(pem.path)\nbankListen = 127.0.0.1:8081\n").isEmpty)
        #expect(try warnings("listen = 127.0.0.1:8080\nbankListen = 10.1.2.3:8081\nsoapUsername = bank\nsoapPassword = secret-secret\n") == ["10.1.2.3:8081"])
        #expect(try warnings("listen = 127.0.0.1:8080\nbankListen = 10.1.2.3:8081\nsoapAuthentication = none\n") == ["10.1.2.3:8081", "10.1.2.3"])
        let message = try GatewayConfiguration.parse(text: "listen = 127.evil.example:8080\nbankListen = 127.0.0.1:8081\n", name: "server.conf")
            .exposureWarnings.first?.message
        #expect(message?.contains("plain HTTP") == true)
    }

    @Test("booleans are true or false, in any case; yes, on, 1 and the like are refused with the line named")
    func booleansStrict() throws {
        #expect(try GatewayConfiguration.parse(text: "overrideSubscriptions = TRUE\n", name: "server.conf").overrideSubscriptions)
        #expect(try !GatewayConfiguration.parse(text: "overrideSubscriptions = false\n", name: "server.conf").overrideSubscriptions)
        for word in ["yes", "on", "1", "no", "off", "0", "ture"] {
            #expect {
                try GatewayConfiguration.parse(text: "logLevel = info\noverrideSubscriptions = \(word)\n", name: "server.conf")
            } throws: { error in
                "\(error)".contains("server.conf:2") && "\(error)".contains("write true or false")
            }
        }
    }

    @Test("an example's CHANGE-ME placeholder left in a secret or in dbUrl refuses the configuration, naming the key and line")
    func placeholdersRefused() throws {
        for (text, key) in [("soapUsername = bank\nsoapPassword = CHANGE-ME-a-long-random-password\n", "soapPassword"),
                            ("dbUrl = postgresql://pigeon:CHANGE-ME@db:5432/pigeon\n", "dbUrl"),
                            ("dbPassword = change-me\n", "dbPassword")] {
            #expect {
                try GatewayConfiguration.parse(text: text, name: "server.conf")
            } throws: { error in
                "\(error)".contains(key) && "\(error)".contains("placeholder") && "\(error)".contains("server.conf:")
            }
        }
        _ = try GatewayConfiguration.parse(text: "soapUsername = bank\nsoapPassword = a-real-long-password\n", name: "server.conf")
    }
}
