import Foundation
import PigeonCore
import PigeonTestSupport
import Testing

/// Live Activities and widget refreshes (CONTRACT §9) through the router: the bank's SOAP
/// operations and the phone's token calls on in-memory stores. Pushes and their order are the
/// end-to-end suite's (`LiveActivityTests`).
@Suite("Live Activities through the router", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct LiveActivityRouteTests {
    static let startToken = String(repeating: "5a", count: 32)
    static let updateToken = String(repeating: "6b", count: 32)

    static func states(_ text: String) -> [String: String] {
        var states: [String: String] = [:]
        for entry in text.components(separatedBy: "<entry>").dropFirst() {
            guard let key = entry.components(separatedBy: "<key>").dropFirst().first?.components(separatedBy: "</key>").first,
                  let value = entry.components(separatedBy: "<value>").dropFirst().first?.components(separatedBy: "</value>").first else { continue }
            states[key] = value
        }
        return states
    }

    @Test("an activity's life: NO_TOKEN without a start token, STARTING with one, RUNNING with the update token, ENDED; each call wakes the engine")
    func life() async throws {
        let harness = try RouterHarness(authorizedUsers: ["alice", "bob", "dana"])
        let alice = try await harness.register(user: "alice")
        _ = try await harness.register(user: "bob", device: "b")
        _ = try await harness.register(user: "dana", device: "pixel", platform: "ANDROID")
        let saved = await harness.call("PUT", "/api/v1/activities/start-tokens/TransferAttributes",
                                       body: #"{"pushToStartToken":"\#(Self.startToken)"}"#, bearer: alice)
        #expect(saved.status == 200)
        #expect(saved.json["state"] == "SAVED")

        let started = await harness.soap(ActivitySOAP.start(id: "t-1", recipients: ["alice", "bob", "dana"]))
        #expect(started.text.contains("<status>OK</status>"), "\(started.text)")
        #expect(Self.states(started.text) == ["alice": "STARTING", "bob": "NO_TOKEN", "dana": "STARTING"])
        #expect(harness.activityWakes == 1)
        #expect(await harness.soap(ActivitySOAP.start(id: "t-1", recipients: ["alice"])).text.contains("<status>DUPLICATED_ENTITY</status>"))

        let token = await harness.call("PUT", "/api/v1/activities/t-1/token", body: #"{"pushToken":"\#(Self.updateToken)"}"#, bearer: alice)
        #expect(token.status == 200)
        #expect(token.json["state"] == "RUNNING")
        #expect(Self.states(await harness.soap(ActivitySOAP.status(id: "t-1")).text)["alice"] == "RUNNING")
        #expect(await harness.soap(ActivitySOAP.update(id: "t-1", contentState: #"{"step":"sent"}"#)).text.contains("<status>OK</status>"))
        #expect(await harness.soap(ActivitySOAP.end(id: "t-1", extra: "<dismissAfterSeconds>60</dismissAfterSeconds>")).text.contains("<status>OK</status>"))
        #expect(harness.activities.events("t-1") == 2)
        #expect(harness.activityWakes == 4)
        let late = await harness.soap(ActivitySOAP.update(id: "t-1", contentState: "{}"))
        #expect(late.text.contains("<status>ENTITY_NOT_FOUND</status>") && late.text.contains("has ended"))
        let afterEnd = await harness.call("PUT", "/api/v1/activities/t-1/token", body: #"{"pushToken":"\#(Self.updateToken)"}"#, bearer: alice)
        #expect(afterEnd.status == 410)
        #expect(afterEnd.json["error"] == "ACTIVITY_ENDED")
        #expect(await harness.soap(ActivitySOAP.status(id: "nothing")).text.contains("<status>ENTITY_NOT_FOUND</status>"))
    }

    @Test("bad input is a SOAP fault naming the field, and nothing is stored")
    func badInput() async throws {
        let harness = try RouterHarness()
        for (request, field) in ActivitySOAP.badRequests {
            let answer = await harness.soap(request)
            #expect(answer.status == 500, "\(field): \(answer.text)")
            #expect(answer.text.contains("Fault") && answer.text.contains(field), "\(field): \(answer.text)")
        }
        #expect(harness.activities.activityIds.isEmpty)
        #expect(harness.stored.isEmpty)
        #expect(harness.activityWakes == 0)
    }

    @Test("the phone's calls: bearer required, iPhones only, identifiers and tokens checked, 404/405 as the device API answers them")
    func phoneCalls() async throws {
        let harness = try RouterHarness(authorizedUsers: ["alice", "dana"])
        let alice = try await harness.register(user: "alice")
        let dana = try await harness.register(user: "dana", device: "pixel", platform: "ANDROID")
        let body = #"{"pushToStartToken":"\#(Self.startToken)"}"#
        #expect(await harness.call("PUT", "/api/v1/activities/start-tokens/T", body: body).status == 401)
        let android = await harness.call("PUT", "/api/v1/activities/start-tokens/T", body: body, bearer: dana)
        #expect(android.status == 400 && android.json["error"] == "NOT_AN_IPHONE")
        let badType = await harness.call("PUT", "/api/v1/activities/start-tokens/bad%20type", body: body, bearer: alice)
        #expect(badType.status == 400 && badType.json["error"] == "INVALID_ACTIVITY", "\(badType.text)")
        let badToken = await harness.call("PUT", "/api/v1/activities/start-tokens/T", body: #"{"pushToStartToken":"xyz"}"#, bearer: alice)
        #expect(badToken.status == 400 && badToken.json["error"] == "INVALID_PUSH_TOKEN")
        #expect(await harness.call("GET", "/api/v1/activities/start-tokens/T", bearer: alice).status == 405)
        #expect(await harness.call("POST", "/api/v1/activities/a-1", bearer: alice).status == 405)
        let unknown = await harness.call("PUT", "/api/v1/activities/never/token", body: #"{"pushToken":"\#(Self.updateToken)"}"#, bearer: alice)
        #expect(unknown.status == 404 && unknown.json["error"] == "ACTIVITY_NOT_FOUND")
        #expect(await harness.call("DELETE", "/api/v1/activities/never", bearer: alice).status == 404)
        #expect(harness.activityWakes == 0)
    }

    @Test("a device keeps push-to-start tokens for at most 64 activity types: the 65th is 400 TOO_MANY_ACTIVITY_TYPES, a known type is replaced")
    func startTokenTypes() async throws {
        let harness = try RouterHarness()
        let alice = try await harness.register(user: "alice")
        let body = #"{"pushToStartToken":"\#(Self.startToken)"}"#
        for index in 0..<64 {
            #expect(await harness.call("PUT", "/api/v1/activities/start-tokens/Type\(index)", body: body, bearer: alice).status == 200)
        }
        let refused = await harness.call("PUT", "/api/v1/activities/start-tokens/Type64", body: body, bearer: alice)
        #expect(refused.status == 400 && refused.json["error"] == "TOO_MANY_ACTIVITY_TYPES")
        #expect(await harness.call("PUT", "/api/v1/activities/start-tokens/Type7", body: body, bearer: alice).status == 200)
    }

    @Test("the phone ends an activity on its side: 204, the recipient ENDED")
    func endedOnPhone() async throws {
        let harness = try RouterHarness()
        let alice = try await harness.register(user: "alice")
        _ = await harness.call("PUT", "/api/v1/activities/start-tokens/TransferAttributes", body: #"{"pushToStartToken":"\#(Self.startToken)"}"#, bearer: alice)
        _ = await harness.soap(ActivitySOAP.start(id: "t-2", recipients: ["alice"]))
        #expect(await harness.call("DELETE", "/api/v1/activities/t-2", bearer: alice).status == 204)
        #expect(Self.states(await harness.soap(ActivitySOAP.status(id: "t-2")).text) == ["alice": "ENDED"])
    }

    @Test("refreshWidgets: OK when a recipient has a device, ENTITY_NOT_FOUND when nobody has one, a fault for an empty recipient")
    func widgets() async throws {
        let harness = try RouterHarness()
        _ = try await harness.register(user: "alice")
        #expect(await harness.soap("<inb:refreshWidgets><recipients>alice</recipients><recipients>zed</recipients></inb:refreshWidgets>").text.contains("<status>OK</status>"))
        #expect(harness.activityWakes == 1)
        #expect(await harness.soap("<inb:refreshWidgets><recipients>zed</recipients></inb:refreshWidgets>").text.contains("<status>ENTITY_NOT_FOUND</status>"))
        let empty = await harness.soap("<inb:refreshWidgets><recipients></recipients></inb:refreshWidgets>")
        #expect(empty.status == 500 && empty.text.contains("'recipients' number 1 is empty"))
        #expect(harness.activityWakes == 1)
    }

    @Test("refreshControls: OK when a recipient has an iPhone, ENTITY_NOT_FOUND when only an Android phone or nobody, a fault for an empty recipient")
    func controls() async throws {
        let harness = try RouterHarness(authorizedUsers: ["alice", "andy"])
        _ = try await harness.register(user: "alice")
        _ = try await harness.register(user: "andy", platform: "ANDROID")
        #expect(await harness.soap("<inb:refreshControls><recipients>alice</recipients></inb:refreshControls>").text.contains("<status>OK</status>"))
        #expect(harness.activityWakes == 1)
        let android = await harness.soap("<inb:refreshControls><recipients>andy</recipients><recipients>zed</recipients></inb:refreshControls>")
        #expect(android.text.contains("<status>ENTITY_NOT_FOUND</status>") && android.text.contains("iPhone"), "\(android.text)")
        #expect(await harness.soap("<inb:refreshControls><recipients></recipients></inb:refreshControls>").status == 500)
        #expect(harness.activityWakes == 1)
    }

    @Test("without Live Activities the bank's operations are a Server fault and the phone's calls 404")
    func notAvailable() async throws {
        let harness = try RouterHarness(liveActivities: false)
        let alice = try await harness.register(user: "alice")
        let answer = await harness.soap(ActivitySOAP.start(id: "t-3", recipients: ["alice"]))
        #expect(answer.status == 500 && answer.text.contains("Live Activities are not available"))
        #expect(await harness.call("PUT", "/api/v1/activities/start-tokens/T", body: #"{"pushToStartToken":"\#(Self.startToken)"}"#, bearer: alice).status == 404)
    }

    @Test("broadcast channels: created per activity type, broadcast to (an end too), deleted; a bad storage policy, channel id or oversized payload is a fault that reaches no channel; what Apple refuses or dropped is in the answer")
    func channels() async throws {
        let harness = try RouterHarness()
        let created = await harness.soap("<inb:createActivityChannel><activityType>MatchAttributes</activityType><storagePolicy>1</storagePolicy></inb:createActivityChannel>")
        let channelId = try #require(created.text.components(separatedBy: "<channelId>").dropFirst().first?.components(separatedBy: "</channelId>").first)
        #expect(harness.channels.channels[channelId]?.activityType == "MatchAttributes" && harness.channels.channels[channelId]?.storagePolicy == 1)

        let update = "<inb:broadcastActivityUpdate><channelId>\(channelId)</channelId><contentState>{&quot;score&quot;:&quot;1:0&quot;}</contentState></inb:broadcastActivityUpdate>"
        #expect(await harness.soap(update).text.contains("<status>OK</status>"))
        let end = "<inb:broadcastActivityUpdate><channelId>\(channelId)</channelId><contentState>{}</contentState><end>true</end></inb:broadcastActivityUpdate>"
        #expect(await harness.soap(end).text.contains("<status>OK</status>"))
        let events = harness.channels.channels[channelId]?.broadcasts ?? []
        #expect(events.map(\.kind) == [.update, .end] && events.first?.contentState == #"{"score":"1:0"}"#, "\(events)")

        for (request, field) in [
            ("<inb:createActivityChannel><activityType>MatchAttributes</activityType><storagePolicy>2</storagePolicy></inb:createActivityChannel>", "storagePolicy"),
            ("<inb:createActivityChannel><activityType>bad type</activityType><storagePolicy>0</storagePolicy></inb:createActivityChannel>", "activityType"),
            ("<inb:deleteActivityChannel><channelId>not a channel!</channelId></inb:deleteActivityChannel>", "channelId"),
            ("<inb:broadcastActivityUpdate><channelId>\(channelId)</channelId><contentState>{&quot;a&quot;:&quot;\(String(repeating: "x", count: 5000))&quot;}</contentState></inb:broadcastActivityUpdate>", "contentState"),
        ] {
            let fault = await harness.soap(request)
            #expect(fault.status == 500 && fault.text.contains(field), "\(field): \(fault.text)")
        }
        #expect(harness.channels.channels.count == 1 && harness.channels.channels[channelId]?.broadcasts.count == 2, "a fault reaches no channel")

        #expect(await harness.soap("<inb:deleteActivityChannel><channelId>\(channelId)</channelId></inb:deleteActivityChannel>").text.contains("<status>OK</status>"))
        #expect(harness.channels.channels.isEmpty)
        let gone = await harness.soap(update)
        #expect(gone.text.contains("<status>ENTITY_NOT_FOUND</status>") && gone.text.contains(channelId), "\(gone.text)")

        harness.channels.refuse(appId: "wallet-app")
        let refused = await harness.soap("<inb:createActivityChannel><appId>wallet-app</appId><activityType>MatchAttributes</activityType><storagePolicy>0</storagePolicy></inb:createActivityChannel>")
        #expect(refused.text.contains("<status>INTERNAL_SERVER_ERROR</status>") && refused.text.contains("broadcast capability"), "\(refused.text)")
        #expect(harness.activityWakes == 0, "channels are Apple's to push; the activity engine is not woken")
    }
}
