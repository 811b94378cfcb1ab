import Foundation
@testable import PigeonConfiguration
import PigeonDomain
@testable import PigeonDeviceAPI
@testable import PigeonHTTP
import Testing
import PigeonTestSupport

@Suite("Apps in server.conf and at registration", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct AppsConfigurationTests {
    /// A readable file to name as a key path (check-config reads the keys themselves; these
    /// tests check the configuration's rules).
    static let readable = #filePath

    @Test("app.<name>.<key> configures named apps; the top-level keys stay the default app")
    func apps() throws {
        let text = """
            apnsKeyPath = \(Self.readable)
            apnsKeyId = KEY1
            apnsTeamId = TEAM1
            apnsTopic = com.bank.retail
            app.business.apnsKeyPath = \(Self.readable)
            app.business.apnsKeyId = KEY2
            app.business.apnsTeamId = TEAM1
            app.business.apnsTopic = com.bank.business
            app.business.apnsIsProduction = true
            app.business.apnsSandboxEndpoint = https://127.0.0.1:9/sandbox/
            app.white-label_1.fcmServiceAccountPath = \(Self.readable)
            app.white-label_1.rustoreProjectId = ru-project
            app.white-label_1.rustoreServiceToken = ru-secret
            """
        let configuration = try GatewayConfiguration.parse(text: text, name: "server.conf")
        #expect(configuration.pushApps.map(\.id) == ["", "business", "white-label_1"])
        #expect(configuration.apns.topic == "com.bank.retail")
        #expect(configuration.apns.resolvedEndpoint == "https://api.sandbox.push.apple.com")
        let business = try #require(configuration.apps["business"])
        #expect(business.apns.keyId == "KEY2" && business.apns.topic == "com.bank.business")
        #expect(business.apns.resolvedEndpoint == "https://api.push.apple.com")
        #expect(business.apns.resolvedSandboxEndpoint == "https://127.0.0.1:9/sandbox")
        #expect(configuration.apps["white-label_1"]?.fcm.serviceAccountPath == Self.readable)
        #expect(configuration.apps["white-label_1"]?.rustore.projectId == "ru-project")
        #expect(configuration.apps["white-label_1"]?.rustore.resolvedEndpoint == "https://vkpns.rustore.ru")
    }

    @Test("a single-app file is read as before: one app, the default")
    func singleApp() throws {
        let configuration = try GatewayConfiguration.parse(text: "apnsTopic = com.bank\nfcmEndpoint = https://127.0.0.1:9\n", name: "server.conf")
        #expect(configuration.pushApps.count == 1)
        #expect(configuration.pushApps[0].id == PushRoute.defaultApp)
        #expect(configuration.apns.topic == "com.bank")
        #expect(configuration.fcm.endpoint == "https://127.0.0.1:9")
        #expect(configuration.apns.resolvedSandboxEndpoint == "https://api.sandbox.push.apple.com")
    }

    @Test("bad app sections stop start-up with a message naming the key", arguments: [
        ("app.business.dbUrl = x", "unknown key 'dbUrl' for app 'business'"),
        ("app.business = x", "must be app.<name>.<key>"),
        ("app..apnsTopic = x", "1 to 64 letters"),
        ("app.bad name.apnsTopic = x", "is not a valid key"),
        ("app.bad+name.apnsTopic = x", "is not a valid key"),
        ("app.default.apnsTopic = x", "'default' is the app of the top-level keys"),
        ("app.business.apnsIsProduction = maybe", "is not a boolean"),
        ("app.business.apnsTopic = com.bank.business", "app 'business' configures no push service"),
        ("app.business.apnsKeyPath = \(readable)\napp.business.apnsKeyId = K\napp.business.apnsTeamId = T", "has no app.business.apnsTopic"),
        ("app.business.apnsKeyPath = \(readable)\napp.business.apnsTopic = t", "app.business.apnsKeyPath needs app.business.apnsKeyId"),
        ("app.business.fcmServiceAccountPath = /nonexistent/account.json", "app.business.fcmServiceAccountPath: cannot read"),
        ("rustoreProjectId = p", "rustoreProjectId and rustoreServiceToken must be set together"),
        ("webPushAllowedHosts = 127.0.0.1:http", "each with :port when not 443"),
        ("webPushAllowedHosts = *", "each with :port when not 443"),
        ("app.business.rustoreServiceToken = t", "app.business.rustoreProjectId and app.business.rustoreServiceToken must be set together"),
        ("app.business.rustoreProjectId = p\napp.business.rustoreServiceToken = t\napp.business.rustoreEndpoint = ftp://x", "not an http(s) URL"),
        ("fcmServiceAccountPath = \(readable)\nfcmEndpoint = http://fcm.example", "fcmEndpoint must be https://"),
        ("app.business.rustoreProjectId = p\napp.business.rustoreServiceToken = t\napp.business.rustoreEndpoint = http://127.evil.example",
         "app.business.rustoreEndpoint must be https://"),
        ("apnsCertificatePath = \(readable)\napnsSandboxEndpoint = http://10.0.0.1:8443", "apnsSandboxEndpoint must be https://"),
    ])
    func refused(line: String, message: String) {
        #expect {
            _ = try GatewayConfiguration.parse(text: line, name: "server.conf")
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test("plain http:// push endpoints: to a loopback address, or with allowInsecurePushEndpoints")
    func plainEndpoints() throws {
        _ = try GatewayConfiguration.parse(text: "fcmServiceAccountPath = \(Self.readable)\nfcmEndpoint = http://127.0.0.1:9", name: "server.conf")
        _ = try GatewayConfiguration.parse(text: "fcmServiceAccountPath = \(Self.readable)\nfcmEndpoint = http://[::1]:9", name: "server.conf")
        _ = try GatewayConfiguration.parse(
            text: "allowInsecurePushEndpoints = true\nfcmServiceAccountPath = \(Self.readable)\nfcmEndpoint = http://fcm.example", name: "server.conf")
    }

    @Test("registration: appId names a configured app (absent or 'default': the default app), environment only for iOS tokens")
    func registration() throws {
        let apps = [PushRoute.defaultApp: WebPushHosts(patterns: ["fcm.googleapis.com"]), "business": WebPushHosts(patterns: [])]
        func body(_ extra: String, platform: String = "IOS", token: String = String(repeating: "ab", count: 32)) -> Data {
            Data(#"{"bankClientId":"b","userId":"u","deviceId":"d","platform":"\#(platform)","pushToken":"\#(token)"\#(extra)}"#.utf8)
        }
        #expect(try RegisterRequest(body(""), apps: apps).identity.appId == PushRoute.defaultApp)
        #expect(try RegisterRequest(body(#","appId":"default""#), apps: apps).identity.appId == PushRoute.defaultApp)
        let business = try RegisterRequest(body(#","appId":"business","environment":"sandbox""#), apps: apps).identity
        #expect(business.appId == "business" && business.environment == .sandbox)
        let android = try RegisterRequest(body(#","environment":"sandbox""#, platform: "ANDROID", token: String(repeating: "f", count: 140)), apps: apps).identity
        #expect(android.environment == .production)
        #expect(try RegisterRequest(body("", platform: "RUSTORE", token: "rustore-token-0123456789"), apps: apps).identity.platform == .rustore)
        // Web Push: the subscription object, its host allowed for the app, its key on the curve.
        let point = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        func web(_ endpoint: String, p256dh: String = point) -> Data {
            Data(#"{"bankClientId":"b","userId":"u","deviceId":"d","platform":"WEB","pushToken":{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(p256dh)","auth":"BTBZMqHH6r4Tts7J_aSIgg"}}}"#.utf8)
        }
        let browser = try RegisterRequest(web("https://fcm.googleapis.com/fcm/send/x1"), apps: apps)
        #expect(browser.identity.platform == .web)
        #expect(WebPushSubscription(stored: browser.pushToken)?.endpoint == "https://fcm.googleapis.com/fcm/send/x1")
        var offCurve = Array(point)
        offCurve[50] = offCurve[50] == "A" ? "B" : "A"
        for (request, code) in [(web("https://169.254.169.254/latest/meta-data"), "WEB_PUSH_HOST_NOT_ALLOWED"),
                                (web("http://fcm.googleapis.com/x"), "INVALID_PUSH_TOKEN"),
                                (web("https://fcm.googleapis.com/x", p256dh: String(offCurve)), "INVALID_PUSH_TOKEN")] {
            #expect {
                _ = try RegisterRequest(request, apps: apps)
            } throws: { ($0 as? APIError)?.code == code }
        }
        #expect {
            _ = try RegisterRequest(body("", platform: "RUSTORE", token: "bad token with spaces"), apps: apps)
        } throws: { ($0 as? APIError)?.code == "INVALID_PUSH_TOKEN" }
        for (extra, code) in [(#","appId":"retail""#, "UNKNOWN_APP"), (#","appId":"""#, "INVALID_FIELD"),
                              (#","environment":"staging""#, "INVALID_FIELD"), (#","appId":7"#, "INVALID_FIELD")] {
            #expect {
                _ = try RegisterRequest(body(extra), apps: apps)
            } throws: { error in
                (error as? APIError)?.code == code
            }
        }
    }
}
