import Foundation
import PigeonCore
import PigeonDomain
import PigeonCrypto
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import PostgresDriver
import Testing
@testable import PigeonServer

/// Confidential notifications end to end (CONTRACT §8): SOAP send → engine → every push service
/// (the simulator's, over HTTP/2 + TLS) sealed to each phone's key; the simulated phones open
/// them; the content is erased once the notification is over.
@Suite("Confidential notifications end to end", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct ConfidentialDeliveryTests {
    static let code = "482913"
    static let text = "Code \(code) confirms 1,250.00 EUR to ACME"

    static func send(id: String, recipients: [String], timeout: Int = 600, confidential: Bool = true) -> String {
        "<inb:sendNotification><notification>\(confidential ? "<confidential>true</confidential>" : "")"
            + "<details><entry><key>name</key><value>ACME Shop</value></entry></details><id>\(id)</id>"
            + "<pushContent><details><entry><key>target</key><value>\(code)</value></entry></details><text>\(text)</text><type>PIN_CODE</type></pushContent>"
            + recipients.map { "<recipients>\($0)</recipients>" }.joined() + "<timeout>\(timeout)</timeout></notification></inb:sendNotification>"
    }

    /// Each line of `/simulator/pushes` as an object.
    static func records(_ simulator: Simulator) throws -> [[String: Any]] {
        try simulator.pushRecords.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    @Test("every service's push carries neither text, target nor details in clear, and opens on its phone to exactly the notification; a phone without a key is told to fetch")
    func sealedToEveryService() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, harness, subscriptions) = (setting.simulator, setting.harness, setting.subscriptions)
        let browser = try WebPushSubscription(json: JSONSerialization.jsonObject(with: simulator.webPush.subscribe(baseURL: simulator.baseURL)))
        let browserId = String(browser.endpoint.split(separator: "/").last ?? "")
        let devices: [(Platform, String, String)] = [
            (.ios, "iphone", String(repeating: "ab", count: 32)), (.android, "pixel", "fcm-token-" + String(repeating: "x", count: 140)),
            (.rustore, "rustore-phone", "rustore-token-1"), (.huawei, "huawei-phone", "IQAAAACy0huawei-token"), (.web, "browser", browser.storedForm),
        ]
        for (platform, deviceId, token) in devices {
            let keyToken = platform == .web ? browserId : token
            let key = try simulator.keyring.makeKey(token: keyToken, keyId: "key-\(deviceId)")
            try await subscriptions.subscribe(bankClientId: "bank", userId: "c-user", deviceId: deviceId, platform: platform, pushToken: token,
                                              encryptionKey: DeviceEncryptionKey(keyId: key.keyId, publicKey: key.publicKey))
        }
        let keyless = String(repeating: "cd", count: 32)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "c-keyless", deviceId: "old-iphone", platform: .ios, pushToken: keyless)

        let reply = try await harness.soap(Self.send(id: "conf-1", recipients: ["c-user", "c-keyless"]))
        #expect(reply.status == 200, "\(reply.text)")
        #expect(try await setting.settledStates(id: "conf-1") == [RecipientState(user: "c-user", state: .sent), RecipientState(user: "c-keyless", state: .sent)])

        // A delivery is SENT once one device accepted; the other services' pushes may still be
        // on their way (a loaded machine retries a timed-out one): wait for all six.
        var records = try Self.records(simulator)
        for _ in 0..<300 where records.count < 6 {
            try await Task.sleep(for: .milliseconds(100))
            records = try Self.records(simulator)
        }
        #expect(records.count == 6)
        for record in records {
            let line = String(decoding: try JSONSerialization.data(withJSONObject: record.filter { $0.key != "decrypted" }), as: UTF8.self)
            // The sealed parts are random base64url, which may spell "EUR" or "ACME" by chance:
            // the check is on everything else.
            let clear = line.replacingOccurrences(of: #"\\?"(ct|epk|salt)\\?":\\?"[A-Za-z0-9_-]+\\?""#, with: "", options: .regularExpression)
            #expect(!clear.contains(Self.code) && !clear.contains("ACME") && !clear.contains("EUR"), "content in clear: \(clear)")
            let service = record["service"] as? String ?? ""
            if record["token"] as? String == keyless {
                let payload = try #require(record["payload"] as? [String: Any])
                #expect(payload["fetch"] as? Bool == true && payload["e2e"] == nil)
                #expect((payload["aps"] as? [String: Any])?["mutable-content"] as? Int == 1)
                continue
            }
            let decrypted = try #require(record["decrypted"] as? [String: Any], "\(service) did not open: \(record["decryptError"] ?? "no envelope")")
            #expect(decrypted["notificationId"] as? String == "conf-1", "\(service)")
            #expect(decrypted["text"] as? String == Self.text, "\(service)")
            #expect(decrypted["type"] as? String == "PIN_CODE", "\(service)")
            #expect(decrypted["target"] as? String == Self.code, "\(service)")
            #expect(decrypted["details"] as? [String: String] == ["name": "ACME Shop"], "\(service)")
        }
        #expect(Set(records.compactMap { $0["service"] as? String }) == ["apns", "fcm", "rustore", "huawei", "webpush"])
        // The simulator lists pushes in arrival order across services, each with its time and app.
        let times = records.compactMap { $0["receivedAt"] as? Double }
        #expect(times.count == records.count && times == times.sorted())
        #expect(records.first { $0["service"] as? String == "apns" }?["app"] as? String == SimulatorCredentials.topic)
        #expect(records.first { $0["service"] as? String == "huawei" }?["app"] as? String == SimulatorCredentials.hmsAppId)
        // Android's services get data messages only: nothing for the system to show.
        for record in records where ["fcm", "rustore"].contains(record["service"] as? String) {
            let message = try #require((record["message"] as? [String: Any])?["message"] as? [String: Any])
            #expect(message["notification"] == nil)
            #expect((message["android"] as? [String: Any])?["notification"] == nil)
        }
        let metrics = try await harness.request("GET", "/metrics").text
        #expect(metrics.contains(#"pigeon_confidential_pushes_total{mode="encrypted",service="apns"} 1"#))
        #expect(metrics.contains(#"pigeon_confidential_pushes_total{mode="fetch",service="apns"} 1"#))
        #expect(metrics.contains(#"pigeon_confidential_pushes_total{mode="encrypted",service="webpush"} 1"#))
        #expect(!harness.logs.records.contains { "\($0.message) \($0.metadata)".contains(Self.code) }, "the code is in the log")
        await harness.gateway.shutdown()
        await setting.database.drop()
    }

    @Test("rotation: a push after the key changed is sealed to the new key; confidentialTypes makes a type confidential without the flag; text over 1,024 bytes is a fault naming text")
    func rotationAndTypes() async throws {
        let setting = try await EndToEnd.start { $0.confidential.types = [.pinCode] }
        defer { setting.fixture.stop() }
        let (simulator, harness, subscriptions) = (setting.simulator, setting.harness, setting.subscriptions)
        let token = String(repeating: "ef", count: 32)
        let first = try simulator.keyring.makeKey(token: token, keyId: "k1")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "rot-user", deviceId: "iphone", platform: .ios, pushToken: token,
                                          encryptionKey: DeviceEncryptionKey(keyId: first.keyId, publicKey: first.publicKey))
        _ = try await harness.soap(Self.send(id: "rot-1", recipients: ["rot-user"], confidential: false))
        #expect(try await setting.settledStates(id: "rot-1") == [RecipientState(user: "rot-user", state: .sent)])
        let second = try simulator.keyring.makeKey(token: token, keyId: "k2")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "rot-user", deviceId: "iphone", platform: .ios, pushToken: token,
                                          encryptionKey: DeviceEncryptionKey(keyId: second.keyId, publicKey: second.publicKey))
        _ = try await harness.soap(Self.send(id: "rot-2", recipients: ["rot-user"], confidential: false))
        #expect(try await setting.settledStates(id: "rot-2") == [RecipientState(user: "rot-user", state: .sent)])
        let records = try Self.records(simulator)
        #expect(records.count == 2)
        let kids = records.compactMap { (($0["payload"] as? [String: Any])?["e2e"] as? [String: Any])?["kid"] as? String }
        #expect(kids == ["k1", "k2"])
        // The simulator now holds only k2: the second push opens, the first was sealed to k1.
        #expect((records[1]["decrypted"] as? [String: Any])?["text"] as? String == Self.text)
        #expect((records[0]["decryptError"] as? String)?.contains("k1") == true)

        let long = String(repeating: "é", count: 513)
        let refused = try await harness.soap(Self.send(id: "rot-long", recipients: ["rot-user"]).replacingOccurrences(of: Self.text, with: long))
        #expect(refused.status == 500)
        #expect(refused.text.contains("pushContent/text"))
        #expect(try await setting.store.deliveryStatus(id: "rot-long") == nil)
        await harness.gateway.shutdown()
        await setting.database.drop()
    }

    @Test("a confidential notification whose sealed payload would pass 4 KB (big details) goes out as fetch, SENT, not SENDING_FAILED; the details answer has the content")
    func tooLargeToSealGoesAsFetch() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, harness, subscriptions) = (setting.simulator, setting.harness, setting.subscriptions)
        let token = String(repeating: "a7", count: 32)
        let key = try simulator.keyring.makeKey(token: token, keyId: "big-key")
        try await subscriptions.subscribe(bankClientId: "bank", userId: "big-user", deviceId: "iphone", platform: .ios, pushToken: token,
                                          encryptionKey: DeviceEncryptionKey(keyId: key.keyId, publicKey: key.publicKey))
        let details = (0..<12).map { "<entry><key>line-\($0)</key><value>\(String(repeating: "x", count: 300))</value></entry>" }.joined()
        let send = Self.send(id: "big-1", recipients: ["big-user"])
            .replacingOccurrences(of: "<details><entry><key>name</key><value>ACME Shop</value></entry></details>", with: "<details>\(details)</details>")
        #expect(try await harness.soap(send).status == 200)
        #expect(try await setting.settledStates(id: "big-1") == [RecipientState(user: "big-user", state: .sent)])
        let records = try Self.records(simulator)
        let payload = try #require(records.last?["payload"] as? [String: Any])
        #expect(payload["fetch"] as? Bool == true && payload["e2e"] == nil, "\(payload)")
        await harness.gateway.shutdown()
        await setting.database.drop()
    }

    @Test("erasure: once every recipient read it, and separately once its timeout passed, details answers 410, getNotificationDetails an empty text, and the database holds no trace of the content")
    func erasure() async throws {
        let setting = try await EndToEnd.start { $0.expirySweepIntervalSeconds = 1 }
        defer { setting.fixture.stop() }
        let (harness, subscriptions, pool) = (setting.harness, setting.subscriptions, setting.database.pool)
        let identifiers = UserIdentifiers(caseInsensitive: false)
        let registry = DeviceRegistry(pool: pool, identifiers: identifiers)
        let bearer = SecretToken.generate()
        let reader = try await registry.subscribe(DeviceIdentity(bankClientId: "bank", userId: "e-reader", deviceId: "iphone", platform: .ios),
                                                  pushToken: String(repeating: "a1", count: 32),
                                                  token: StoredToken(digest: SecretToken.digest(bearer), expiresAt: Date() + 3600), override: false)
        try await subscriptions.subscribe(bankClientId: "bank", userId: "e-late", deviceId: "iphone", platform: .ios, pushToken: String(repeating: "b2", count: 32))

        _ = try await harness.soap(Self.send(id: "erase-read", recipients: ["e-reader"]))
        _ = try await harness.soap(Self.send(id: "erase-timeout", recipients: ["e-late"], timeout: 3))
        #expect(try await setting.settledStates(id: "erase-read") == [RecipientState(user: "e-reader", state: .sent)])
        let details = try await harness.request("GET", "/api/v1/notifications/erase-read/details", headers: ["Authorization": "Bearer \(bearer)"])
        #expect(details.status == 200 && details.text.contains(Self.code), "the phone reads the content while the notification is live")

        _ = try await AcknowledgementStore(pool: pool, identifiers: identifiers)
            .acknowledge(notificationId: "erase-read", user: "e-reader", device: reader, target: .read)
        for id in ["erase-read", "erase-timeout"] {
            #expect(try await Self.waitUntilErased(id, pool), "\(id) was not erased")
        }
        let gone = try await harness.request("GET", "/api/v1/notifications/erase-read/details", headers: ["Authorization": "Bearer \(bearer)"])
        #expect(gone.status == 410)
        #expect(gone.text.contains("CONTENT_GONE"))
        let answer = try await harness.soap("<inb:getNotificationDetails><id>erase-timeout</id></inb:getNotificationDetails>")
        #expect(answer.text.contains("<text></text>") || answer.text.contains("<text/>"), "\(answer.text)")
        #expect(!answer.text.contains(Self.code) && !answer.text.contains("ACME"))
        #expect(try await setting.store.deliveryStatus(id: "erase-timeout") == [RecipientState(user: "e-late", state: .expired)])
        // No trace of the content anywhere in the store: notifications, deliveries, the outbox.
        // Column by column for the code alone (a whole row's text holds keys and times, whose
        // digits may contain it); the text and the details' words anywhere in a row.
        let traces = [
            "notifications": "push_text <> '' OR array_to_string(push_detail_values, ',') LIKE '%\(Self.code)%' OR detail_values IS NOT NULL OR notifications::text LIKE '%ACME%'",
            "deliveries": "deliveries::text LIKE '%Code \(Self.code)%' OR deliveries::text LIKE '%ACME%'",
            "outbox": "outbox::text LIKE '%Code \(Self.code)%' OR outbox::text LIKE '%ACME%'",
        ]
        for (table, condition) in traces {
            let rows = try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM \(table) WHERE \(condition)").scalar }
            #expect(rows == "0", "\(table) keeps the content")
        }
        let metrics = try await harness.request("GET", "/metrics").text
        #expect(metrics.contains(#"pigeon_confidential_contents_erased_total{reason="final"} 1"#))
        #expect(metrics.contains(#"pigeon_confidential_contents_erased_total{reason="expired"} 1"#))
        #expect(!harness.logs.records.contains { "\($0.message) \($0.metadata)".contains(Self.code) }, "the code is in the log")
        await harness.gateway.shutdown()
        await setting.database.drop()
    }

    /// Whether notification `id`'s content is erased within 30 seconds (polled).
    static func waitUntilErased(_ id: String, _ pool: PostgresPool) async throws -> Bool {
        for _ in 0..<300 {
            let erased = try await pool.withConnection { connection in
                try connection.query(sql: "SELECT content_erased_at IS NOT NULL AND push_text = '' AND detail_keys IS NULL FROM notifications WHERE id = $1", [id])
                    .rows.first?.boolean(0)
            }
            if erased == true { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }
}
