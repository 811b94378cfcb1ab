import Foundation
import Testing
@testable import PushCore
import PigeonTestSupport

/// The newer APNs push types' requests (CONTRACT §9) and their Android data messages.
@Suite("Live Activity, broadcast and widget requests", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct LiveActivityPayloadTests {
    static func aps(_ prepared: APNsPreparedMessage) throws -> [String: Any] {
        try #require((try JSONSerialization.jsonObject(with: prepared.body) as? [String: Any])?["aps"] as? [String: Any])
    }

    @Test("a start: liveactivity push type on the topic's .push-type.liveactivity, event, timestamp, attributes and content state as sent, priority 10 with an alert")
    func start() throws {
        let event = LiveActivityEvent(kind: .start, timestamp: 1_800_000_000, contentState: #"{"step":"accepted","progress":0.5}"#, alertTitle: "Transfer",
                                      staleDate: 1_800_000_600, attributesType: "TransferAttributes", attributes: #"{"id":"T-1"}"#, relevanceScore: 12.5)
        let prepared = try LiveActivityRequests.activity(event, appTopic: "com.bank.app")
        #expect(prepared.headers["apns-push-type"] == "liveactivity")
        #expect(prepared.headers["apns-topic"] == "com.bank.app.push-type.liveactivity")
        #expect(prepared.headers["apns-priority"] == "10")
        let aps = try Self.aps(prepared)
        #expect(aps["event"] as? String == "start" && aps["timestamp"] as? Int == 1_800_000_000)
        #expect((aps["content-state"] as? [String: Any])?["progress"] as? Double == 0.5)
        #expect(aps["attributes-type"] as? String == "TransferAttributes")
        #expect(aps["attributes"] as? [String: String] == ["id": "T-1"])
        #expect(aps["stale-date"] as? Int == 1_800_000_600 && aps["relevance-score"] as? Double == 12.5)
        #expect(aps["alert"] as? [String: String] == ["title": "Transfer"])
    }

    @Test("an update without an alert goes at priority 5 and carries no start fields; an explicit priority wins; an end carries its dismissal date")
    func updateAndEnd() throws {
        let update = try LiveActivityRequests.activity(
            LiveActivityEvent(kind: .update, timestamp: 2, contentState: "{}", attributesType: "T", attributes: "{}"), appTopic: "t")
        #expect(update.headers["apns-priority"] == "5")
        #expect(try Self.aps(update)["attributes"] == nil)
        let urgent = try LiveActivityRequests.activity(LiveActivityEvent(kind: .update, timestamp: 3, contentState: "{}", priority: 10), appTopic: "t")
        #expect(urgent.headers["apns-priority"] == "10")
        let end = try LiveActivityRequests.activity(LiveActivityEvent(kind: .end, timestamp: 4, contentState: "{}", dismissalDate: 99), appTopic: "t")
        #expect(try Self.aps(end)["dismissal-date"] as? Int == 99)
    }

    @Test("a broadcast names its channel instead of a topic; a widget refresh is content-changed on the widgets topic")
    func broadcastAndWidgets() throws {
        let broadcast = try LiveActivityRequests.broadcast(LiveActivityEvent(kind: .update, timestamp: 5, contentState: "{}"), channelId: "dHN0LXNyY2g=")
        #expect(broadcast.headers["apns-channel-id"] == "dHN0LXNyY2g=" && broadcast.headers["apns-topic"] == nil)
        #expect(broadcast.headers["apns-push-type"] == "liveactivity")
        let widgets = LiveActivityRequests.widgets(appTopic: "com.bank.app")
        #expect(widgets.headers["apns-push-type"] == "widgets" && widgets.headers["apns-topic"] == "com.bank.app.push-type.widgets")
        #expect(String(decoding: widgets.body, as: UTF8.self) == #"{"aps":{"content-changed":true}}"#)
    }

    @Test("over 4 KB is refused before sending")
    func tooLarge() {
        let big = #"{"a":""# + String(repeating: "x", count: 4100) + #""}"#
        #expect(throws: PushMessageError.self) {
            try LiveActivityRequests.activity(LiveActivityEvent(kind: .update, timestamp: 1, contentState: big), appTopic: "t")
        }
    }

    @Test("Android gets data only: activityId, event and contentState as strings; widgets: changed")
    func androidData() throws {
        let message = LiveActivityRequests.androidData(activityId: "act-1", event: LiveActivityEvent(kind: .update, timestamp: 1, contentState: #"{"s":1}"#),
                                                       expiresAt: Date().addingTimeInterval(60))
        for builder in [{ try FCMRequestBuilder(projectId: "p").prepare(message, now: Date()).body(registrationToken: "t") },
                        { try RuStoreRequestBuilder(projectId: "p").prepare(message, now: Date()).body(registrationToken: "t") }] {
            let sent = try #require((try JSONSerialization.jsonObject(with: builder()) as? [String: Any])?["message"] as? [String: Any])
            #expect(sent["notification"] == nil && (sent["android"] as? [String: Any])?["notification"] == nil)
            #expect(sent["data"] as? [String: String] == ["activityId": "act-1", "contentState": #"{"s":1}"#, "event": "update"])
        }
        let huawei = try HuaweiRequestBuilder(appId: "1").prepare(LiveActivityRequests.androidWidgets(expiresAt: Date().addingTimeInterval(60)), now: Date())
        let body = try #require((try JSONSerialization.jsonObject(with: huawei.body(registrationToken: "t")) as? [String: Any])?["message"] as? [String: Any])
        #expect(body["data"] as? String == #"{"widgets":"changed"}"# && body["notification"] == nil)
    }

    @Test("Firebase Installation IDs: 22 characters of base64url starting c–f")
    func fid() {
        #expect(FirebaseInstallationID.problem("cXk3tPq9R2u8vW1xY4z6Ab") == nil)
        #expect(FirebaseInstallationID.problem("fXk3tPq9R2u8vW1xY4z6A_") == nil)
        #expect(FirebaseInstallationID.problem("gXk3tPq9R2u8vW1xY4z6Ab") != nil)
        #expect(FirebaseInstallationID.problem("cXk3tPq9R2u8vW1xY4z6A") != nil)
        #expect(FirebaseInstallationID.problem("cXk3tPq9R2u8vW1xY4z6A=") != nil)
        #expect(FirebaseInstallationID.fid(inStored: "fid:abc") == "abc" && FirebaseInstallationID.fid(inStored: "abc:def") == nil)
    }
}
