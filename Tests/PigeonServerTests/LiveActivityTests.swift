import Foundation
import PigeonCore
import PigeonDomain
import PigeonCrypto
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// Apple's and Google's newer push surface end to end (CONTRACT §9): the bank's SOAP calls, the
/// phones' token calls, the activity engine and the simulator's APNs, FCM and channel API over
/// HTTP/2 + TLS. Its tests run one after the other: each starts a gateway, and the suites beside
/// it time their pushes.
@Suite("Live Activities, widgets and broadcast channels end to end", .serialized,
       .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct LiveActivityTests {
    static let startToken = String(repeating: "5a", count: 32)
    static let updateToken = String(repeating: "7b", count: 32)
    static let liveTopic = SimulatorCredentials.topic + ".push-type.liveactivity"

    /// A device subscribed with a bearer token the test can use.
    static func device(_ setting: EndToEnd, user: String, deviceId: String, platform: Platform, pushToken: String) async throws -> String {
        let bearer = SecretToken.generate()
        _ = try await DeviceRegistry(pool: setting.database.pool, identifiers: UserIdentifiers(caseInsensitive: false)).subscribe(
            DeviceIdentity(bankClientId: "bank", userId: user, deviceId: deviceId, platform: platform), pushToken: pushToken,
            token: StoredToken(digest: SecretToken.digest(bearer), expiresAt: Date() + 3600), override: false)
        return bearer
    }

    static func put(_ harness: GatewayHarness, _ path: String, bearer: String, _ json: String) async throws -> GatewayHarness.Reply {
        try await harness.request("PUT", path, body: Data(json.utf8), headers: ["Authorization": "Bearer \(bearer)", "Content-Type": "application/json"])
    }

    static func start(id: String, recipients: [String], contentState: String = #"{"step":"accepted"}"#,
                      attributes: String = #"{"transferId":"T-1"}"#, extra: String = "") -> String {
        ActivitySOAP.start(id: id, recipients: recipients, contentState: contentState, attributes: attributes, extra: extra)
    }

    static func update(id: String, contentState: String, extra: String = "") -> String {
        ActivitySOAP.update(id: id, contentState: contentState, extra: extra)
    }

    /// Each recipient's state in a SOAP answer's `activityStatus`.
    static func states(_ text: String) -> [String: String] {
        var states: [String: String] = [:]
        let entries = text.components(separatedBy: "<entry>").dropFirst()
        for entry in entries {
            guard let key = entry.between("<key>", "</key>"), let value = entry.between("<value>", "</value>") else { continue }
            states[key] = value
        }
        return states
    }

    /// The APNs pushes of a push type, as JSON payloads with their delivery.
    static func apnsPushes(_ simulator: Simulator, type: String) -> [(delivery: APNsSimulator.Delivery, aps: [String: Any])] {
        simulator.apns.deliveries.filter { $0.pushType == type }.compactMap { delivery in
            let payload = (try? JSONSerialization.jsonObject(with: delivery.payload)) as? [String: Any]
            return (payload?["aps"] as? [String: Any]).map { (delivery, $0) }
        }
    }

    /// The FCM data messages sent so far.
    static func fcmData(_ simulator: Simulator) -> [[String: String]] {
        simulator.fcm.deliveries.compactMap { delivery in
            (((try? JSONSerialization.jsonObject(with: delivery.message)) as? [String: Any])?["message"] as? [String: Any])?["data"] as? [String: String]
        }
    }

    /// Waits (polling, up to 30 s) until `condition` holds.
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<300 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    @Test("a Live Activity's life: start to a push-to-start token and an Android device (NO_TOKEN for the others), STARTING until the update token, updates waiting for it and collapsing to the newest, priority by alert, end; timestamps strictly increasing")
    func life() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, harness) = (setting.simulator, setting.harness)
        let iphone = try await Self.device(setting, user: "la-ios", deviceId: "iphone", platform: .ios, pushToken: String(repeating: "a1", count: 32))
        _ = try await Self.device(setting, user: "la-android", deviceId: "pixel", platform: .android, pushToken: "fcm-" + String(repeating: "p", count: 140))
        _ = try await Self.device(setting, user: "la-none", deviceId: "iphone", platform: .ios, pushToken: String(repeating: "c3", count: 32))

        let saved = try await Self.put(harness, "/api/v1/activities/start-tokens/TransferAttributes", bearer: iphone,
                                       #"{"pushToStartToken":"\#(Self.startToken)"}"#)
        #expect(saved.status == 200, "\(saved.text)")
        let started = try await harness.soap(Self.start(id: "transfer-1", recipients: ["la-ios", "la-android", "la-none", "la-nobody"],
                                                        extra: "<alertTitle>Transfer</alertTitle><staleAfterSeconds>600</staleAfterSeconds><relevanceScore>50</relevanceScore>"))
        #expect(started.status == 200, "\(started.text)")
        #expect(Self.states(started.text) == ["la-ios": "STARTING", "la-android": "STARTING", "la-none": "NO_TOKEN", "la-nobody": "NO_TOKEN"])

        #expect(try await Self.eventually { !Self.apnsPushes(simulator, type: "liveactivity").isEmpty && !Self.fcmData(simulator).isEmpty })
        let start = try #require(Self.apnsPushes(simulator, type: "liveactivity").first)
        #expect(start.delivery.deviceToken == Self.startToken)
        #expect(start.delivery.topic == Self.liveTopic)
        #expect(start.delivery.priority == "10", "a start with an alert goes at priority 10")
        #expect(start.aps["event"] as? String == "start")
        #expect(start.aps["attributes-type"] as? String == "TransferAttributes")
        #expect(start.aps["attributes"] as? [String: String] == ["transferId": "T-1"])
        #expect(start.aps["content-state"] as? [String: String] == ["step": "accepted"])
        #expect(start.aps["stale-date"] is NSNumber && start.aps["relevance-score"] as? Int == 50)
        #expect((start.aps["alert"] as? [String: String])?["title"] == "Transfer")
        let startTimestamp = try #require((start.aps["timestamp"] as? NSNumber)?.int64Value)
        #expect(Self.fcmData(simulator).first == ["activityId": "transfer-1", "event": "start", "contentState": #"{"step":"accepted"}"#])
        #expect(try await Self.eventually {
            Self.states(try await harness.soap("<inb:getActivityStatus><activityId>transfer-1</activityId></inb:getActivityStatus>").text)
                == ["la-ios": "STARTING", "la-android": "RUNNING", "la-none": "NO_TOKEN", "la-nobody": "NO_TOKEN"]
        })

        // Two updates while the iPhone has no update token: Android gets both, the iPhone later only the newest.
        #expect(try await harness.soap(Self.update(id: "transfer-1", contentState: #"{"step":"checked"}"#, extra: "<alertBody>Checked</alertBody>")).status == 200)
        #expect(try await Self.eventually { Self.fcmData(simulator).count == 2 })
        #expect(try await harness.soap(Self.update(id: "transfer-1", contentState: #"{"step":"sent"}"#)).status == 200)
        #expect(try await Self.eventually { Self.fcmData(simulator).count == 3 })
        #expect(Self.apnsPushes(simulator, type: "liveactivity").count == 1, "an update went out before the phone sent its update token")

        let tokenAnswer = try await Self.put(harness, "/api/v1/activities/transfer-1/token", bearer: iphone, #"{"pushToken":"\#(Self.updateToken)"}"#)
        #expect(tokenAnswer.status == 200, "\(tokenAnswer.text)")
        #expect(try await Self.eventually { Self.apnsPushes(simulator, type: "liveactivity").count == 2 })
        let update = Self.apnsPushes(simulator, type: "liveactivity")[1]
        #expect(update.delivery.deviceToken == Self.updateToken)
        #expect(update.aps["event"] as? String == "update")
        #expect(update.aps["content-state"] as? [String: String] == ["step": "sent"], "the newest update, not the older one")
        #expect(update.delivery.priority == "5", "a silent update goes at priority 5")
        let updateTimestamp = try #require((update.aps["timestamp"] as? NSNumber)?.int64Value)
        #expect(updateTimestamp > startTimestamp)
        #expect(try await Self.eventually {
            Self.states(try await harness.soap("<inb:getActivityStatus><activityId>transfer-1</activityId></inb:getActivityStatus>").text)["la-ios"] == "RUNNING"
        })

        let ended = try await harness.soap("<inb:endActivity><activityId>transfer-1</activityId><dismissAfterSeconds>60</dismissAfterSeconds></inb:endActivity>")
        #expect(ended.status == 200, "\(ended.text)")
        #expect(try await Self.eventually { Self.apnsPushes(simulator, type: "liveactivity").count == 3 && Self.fcmData(simulator).count == 4 })
        let end = Self.apnsPushes(simulator, type: "liveactivity")[2]
        #expect(end.aps["event"] as? String == "end" && end.aps["dismissal-date"] is NSNumber)
        #expect(end.aps["content-state"] as? [String: String] == ["step": "sent"], "an end without a content state ends on the newest one")
        #expect(((end.aps["timestamp"] as? NSNumber)?.int64Value ?? 0) > updateTimestamp)
        #expect(try await Self.eventually {
            Self.states(try await harness.soap("<inb:getActivityStatus><activityId>transfer-1</activityId></inb:getActivityStatus>").text)
                == ["la-ios": "ENDED", "la-android": "ENDED", "la-none": "NO_TOKEN", "la-nobody": "NO_TOKEN"]
        })
        let late = try await harness.soap(Self.update(id: "transfer-1", contentState: #"{"step":"late"}"#))
        #expect(late.text.contains("ENTITY_NOT_FOUND") && late.text.contains("has ended"))
        #expect(simulator.apns.activityOrder.outOfOrder == 0)
        let duplicate = try await harness.soap(Self.start(id: "transfer-1", recipients: ["la-ios"]))
        #expect(duplicate.text.contains("DUPLICATED_ENTITY"))
        let metrics = try await harness.request("GET", "/metrics").text
        #expect(metrics.contains(#"pigeon_activity_pushes_total{kind="start",outcome="accepted"} 2"#), "\(metrics.split(separator: "\n").filter { $0.contains("activity") })")
        await harness.gateway.shutdown()
        await setting.database.drop()
    }

    @Test("a 410 on an update token removes only that token (the push-to-start token and the device stay); the next token gets the waiting update; the phone ending an activity stops its pushes")
    func deadUpdateToken() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, harness, pool) = (setting.simulator, setting.harness, setting.database.pool)
        let iphone = try await Self.device(setting, user: "dead-ios", deviceId: "iphone", platform: .ios, pushToken: String(repeating: "d4", count: 32))
        #expect(try await Self.put(harness, "/api/v1/activities/start-tokens/TransferAttributes", bearer: iphone,
                                   #"{"pushToStartToken":"\#(Self.startToken)"}"#).status == 200)
        #expect(try await harness.soap(Self.start(id: "dead-1", recipients: ["dead-ios"])).status == 200)
        #expect(try await Self.eventually { Self.apnsPushes(simulator, type: "liveactivity").count == 1 })
        #expect(try await Self.put(harness, "/api/v1/activities/dead-1/token", bearer: iphone, #"{"pushToken":"\#(Self.updateToken)"}"#).status == 200)
        simulator.apns.setFaults(FaultRules([Self.updateToken: .init(.unregistered)]))
        #expect(try await harness.soap(Self.update(id: "dead-1", contentState: #"{"step":"one"}"#)).status == 200)
        #expect(try await Self.eventually {
            try await pool.withConnection { try $0.query(sql: "SELECT update_token IS NULL FROM activity_devices WHERE activity_id = 'dead-1'").scalar } == "t"
        }, "the refused update token was not removed")
        let kept = try await pool.withConnection { connection in
            (try connection.query(sql: "SELECT count(*) FROM activity_start_tokens WHERE token = $1", [Self.startToken]).scalar,
             try connection.query(sql: "SELECT count(*) FROM devices WHERE user_id = 'dead-ios'").scalar,
             try connection.query(sql: "SELECT count(*) FROM activity_pushes WHERE activity_id = 'dead-1'").scalar)
        }
        #expect(kept.0 == "1" && kept.1 == "1", "only the update token goes")
        #expect(kept.2 == "1", "the update waits for the phone's next token")

        let fresh = String(repeating: "9e", count: 32)
        #expect(try await Self.put(harness, "/api/v1/activities/dead-1/token", bearer: iphone, #"{"pushToken":"\#(fresh)"}"#).status == 200)
        #expect(try await Self.eventually { Self.apnsPushes(simulator, type: "liveactivity").contains { $0.delivery.deviceToken == fresh } })

        let deleted = try await harness.request("DELETE", "/api/v1/activities/dead-1", headers: ["Authorization": "Bearer \(iphone)"])
        #expect(deleted.status == 204)
        let before = Self.apnsPushes(simulator, type: "liveactivity").count
        #expect(try await harness.soap(Self.update(id: "dead-1", contentState: #"{"step":"two"}"#)).status == 200)
        let queued = try await pool.withConnection { try $0.query(sql: "SELECT count(*) FROM activity_pushes WHERE activity_id = 'dead-1'").scalar }
        #expect(queued == "0", "an activity the phone ended gets no more pushes")
        #expect(Self.apnsPushes(simulator, type: "liveactivity").count == before)
        // The phone's calls: an unknown activity, an Android device, a bad token.
        #expect(try await Self.put(harness, "/api/v1/activities/nope/token", bearer: iphone, #"{"pushToken":"\#(fresh)"}"#).status == 404)
        #expect(try await Self.put(harness, "/api/v1/activities/dead-1/token", bearer: iphone, #"{"pushToken":"xyz"}"#).status == 400)
        #expect(try await Self.put(harness, "/api/v1/activities/start-tokens/Bad%20Type", bearer: iphone, #"{"pushToStartToken":"\#(fresh)"}"#).status == 400)
        #expect(try await Self.put(harness, "/api/v1/activities/dead-1/token", bearer: "not-a-token", #"{"pushToken":"\#(fresh)"}"#).status == 401)
        await harness.gateway.shutdown()
        await setting.database.drop()
    }

    @Test("refreshWidgets: a widgets push on the widgets topic to each iPhone and a data message to each Android device; nobody with a device → ENTITY_NOT_FOUND")
    func widgets() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, harness) = (setting.simulator, setting.harness)
        let iphoneToken = String(repeating: "e5", count: 32)
        _ = try await Self.device(setting, user: "w-user", deviceId: "iphone", platform: .ios, pushToken: iphoneToken)
        _ = try await Self.device(setting, user: "w-user", deviceId: "pixel", platform: .android, pushToken: "fcm-" + String(repeating: "w", count: 140))
        let answer = try await harness.soap("<inb:refreshWidgets><recipients>w-user</recipients><recipients>w-nobody</recipients></inb:refreshWidgets>")
        #expect(answer.status == 200 && answer.text.contains(">OK<"), "\(answer.text)")
        #expect(try await Self.eventually { !Self.apnsPushes(simulator, type: "widgets").isEmpty && !Self.fcmData(simulator).isEmpty })
        let push = try #require(Self.apnsPushes(simulator, type: "widgets").first)
        #expect(push.delivery.deviceToken == iphoneToken)
        #expect(push.delivery.topic == SimulatorCredentials.topic + ".push-type.widgets")
        #expect(push.aps["content-changed"] as? Bool == true)
        #expect(Self.fcmData(simulator) == [["widgets": "changed"]])
        let nobody = try await harness.soap("<inb:refreshWidgets><recipients>w-nobody</recipients></inb:refreshWidgets>")
        #expect(nobody.text.contains("ENTITY_NOT_FOUND"))
        await harness.gateway.shutdown()
        await setting.database.drop()
    }

    @Test("refreshControls: a controls push on the controls topic to each iPhone, nothing to Android; nobody with an iPhone → ENTITY_NOT_FOUND")
    func controls() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, harness) = (setting.simulator, setting.harness)
        let iphoneToken = String(repeating: "c7", count: 32)
        _ = try await Self.device(setting, user: "c-user", deviceId: "iphone", platform: .ios, pushToken: iphoneToken)
        _ = try await Self.device(setting, user: "c-user", deviceId: "pixel", platform: .android, pushToken: "fcm-" + String(repeating: "c", count: 140))
        // A widget refresh waiting for the same iPhone keeps its own row.
        _ = try await harness.soap("<inb:refreshWidgets><recipients>c-user</recipients></inb:refreshWidgets>")
        let answer = try await harness.soap("<inb:refreshControls><recipients>c-user</recipients></inb:refreshControls>")
        #expect(answer.status == 200 && answer.text.contains(">OK<"), "\(answer.text)")
        #expect(try await Self.eventually { !Self.apnsPushes(simulator, type: "controls").isEmpty && !Self.apnsPushes(simulator, type: "widgets").isEmpty })
        let push = try #require(Self.apnsPushes(simulator, type: "controls").first)
        #expect(push.delivery.deviceToken == iphoneToken)
        #expect(push.delivery.topic == SimulatorCredentials.topic + ".push-type.controls")
        #expect(push.aps["content-changed"] as? Bool == true)
        #expect(Self.fcmData(simulator) == [["widgets": "changed"]], "the Android phone got the widget refresh only")
        _ = try await Self.device(setting, user: "c-android", deviceId: "pixel", platform: .android, pushToken: "fcm-" + String(repeating: "d", count: 140))
        #expect(try await harness.soap("<inb:refreshControls><recipients>c-android</recipients></inb:refreshControls>").text.contains("ENTITY_NOT_FOUND"))
        await harness.gateway.shutdown()
        await setting.database.drop()
    }

    @Test("broadcast channels: created through the management API, broadcast to, deleted; a broadcast to a deleted channel and a bundle without the capability are reported in the answer")
    func channels() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, harness) = (setting.simulator, setting.harness)
        let created = try await harness.soap("<inb:createActivityChannel><activityType>MatchAttributes</activityType><storagePolicy>1</storagePolicy></inb:createActivityChannel>")
        #expect(created.status == 200 && created.text.contains(">OK<"), "\(created.text)")
        let channelId = try #require(created.text.between("<channelId>", "</channelId>"))
        #expect(simulator.apns.channels.channelIds == [channelId])

        let broadcast = "<inb:broadcastActivityUpdate><channelId>\(channelId)</channelId><contentState>{&quot;score&quot;:&quot;1:0&quot;}</contentState>"
            + "<alertTitle>Goal</alertTitle></inb:broadcastActivityUpdate>"
        let sent = try await harness.soap(broadcast)
        #expect(sent.status == 200 && sent.text.contains(">OK<"), "\(sent.text)")
        #expect(try await harness.soap(broadcast).text.contains(">OK<"))
        let broadcasts = simulator.apns.channels.broadcasts
        #expect(broadcasts.count == 2 && broadcasts.allSatisfy { $0.channelId == channelId && $0.bundleId == SimulatorCredentials.topic })
        let payloads = broadcasts.compactMap { ((try? JSONSerialization.jsonObject(with: $0.payload)) as? [String: Any])?["aps"] as? [String: Any] }
        #expect(payloads.first?["content-state"] as? [String: String] == ["score": "1:0"])
        #expect(payloads.first?["event"] as? String == "update" && broadcasts.first?.priority == "10")
        let stamps = payloads.compactMap { ($0["timestamp"] as? NSNumber)?.int64Value }
        #expect(stamps.count == 2 && stamps[1] > stamps[0], "a channel's broadcasts carry increasing timestamps")

        let deleted = try await harness.soap("<inb:deleteActivityChannel><channelId>\(channelId)</channelId></inb:deleteActivityChannel>")
        #expect(deleted.text.contains(">OK<"), "\(deleted.text)")
        #expect(simulator.apns.channels.channelIds.isEmpty)
        let afterDelete = try await harness.soap(broadcast)
        #expect(afterDelete.text.contains("ENTITY_NOT_FOUND") && afterDelete.text.contains(channelId), "\(afterDelete.text)")

        // A channel Apple dropped on its side: the broadcast reports it and the channel is forgotten.
        let second = try await harness.soap("<inb:createActivityChannel><activityType>MatchAttributes</activityType><storagePolicy>0</storagePolicy></inb:createActivityChannel>")
        let secondId = try #require(second.text.between("<channelId>", "</channelId>"))
        simulator.apns.channels.drop(channelId: secondId)
        let gone = try await harness.soap(broadcast.replacingOccurrences(of: channelId, with: secondId))
        #expect(gone.text.contains("ENTITY_NOT_FOUND") && gone.text.contains("ChannelNotRegistered"), "\(gone.text)")
        let kept = try await setting.database.pool.withConnection { try $0.query(sql: "SELECT count(*) FROM activity_channels").scalar }
        #expect(kept == "0")
        simulator.apns.channels.removeCapability(bundleId: SimulatorCredentials.topic)
        let refused = try await harness.soap("<inb:createActivityChannel><activityType>MatchAttributes</activityType><storagePolicy>0</storagePolicy></inb:createActivityChannel>")
        #expect(refused.text.contains("INTERNAL_SERVER_ERROR") && refused.text.contains("FeatureNotEnabled"), "\(refused.text)")
        let badPolicy = try await harness.soap("<inb:createActivityChannel><activityType>MatchAttributes</activityType><storagePolicy>2</storagePolicy></inb:createActivityChannel>")
        #expect(badPolicy.status == 500 && badPolicy.text.contains("storagePolicy"))
        await harness.gateway.shutdown()
        await setting.database.drop()
    }

    /// Requests that must be refused, and the field each fault must name.
    @Test("interruptionLevel reaches APNs and getNotificationDetails; every push carries its collapse identifier; a FID device is addressed by FCM v1's fid target")
    func interruptionCollapseAndFID() async throws {
        let setting = try await EndToEnd.start()
        defer { setting.fixture.stop() }
        let (simulator, harness) = (setting.simulator, setting.harness)
        let fid = "cXk3tPq9R2u8vW1xY4z6Ab"
        _ = try await Self.device(setting, user: "i-user", deviceId: "iphone", platform: .ios, pushToken: String(repeating: "ab", count: 32))
        _ = try await Self.device(setting, user: "i-user", deviceId: "pixel", platform: .android, pushToken: "fid:" + fid)
        let send = "<inb:sendNotification><notification><id>fraud-1</id><interruptionLevel>time-sensitive</interruptionLevel>"
            + "<pushContent><text>Card blocked</text><type>MESSAGE</type></pushContent><recipients>i-user</recipients><timeout>60</timeout></notification></inb:sendNotification>"
        #expect(try await harness.soap(send).status == 200)
        #expect(try await setting.settledStates(id: "fraud-1") == [RecipientState(user: "i-user", state: .sent)])
        #expect(try await Self.eventually { simulator.apns.deliveries.count == 1 && simulator.fcm.deliveries.count == 1 })
        let apns = try #require(simulator.apns.deliveries.first)
        #expect(apns.collapseId == "fraud-1")
        let aps = try #require(((try JSONSerialization.jsonObject(with: apns.payload)) as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["interruption-level"] as? String == "time-sensitive")
        let fcm = try #require(simulator.fcm.deliveries.first)
        #expect(fcm.target == "fid" && fcm.registrationToken == fid)
        let message = try #require(((try JSONSerialization.jsonObject(with: fcm.message)) as? [String: Any])?["message"] as? [String: Any])
        #expect(message["token"] == nil && message["fid"] as? String == fid)
        #expect(((message["android"] as? [String: Any])?["notification"] as? [String: Any])?["tag"] as? String == "fraud-1")
        let details = try await harness.soap("<inb:getNotificationDetails><id>fraud-1</id></inb:getNotificationDetails>")
        #expect(details.text.contains("<interruptionLevel>time-sensitive</interruptionLevel>"), "\(details.text)")
        await harness.gateway.shutdown()
        await setting.database.drop()
    }
}

extension String {
    /// The text between the first `start` and the `end` after it.
    func between(_ start: String, _ end: String) -> String? {
        guard let from = range(of: start), let to = range(of: end, range: from.upperBound..<endIndex) else { return nil }
        return String(self[from.upperBound..<to.lowerBound])
    }
}
