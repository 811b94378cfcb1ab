import Foundation
import Synchronization

/// What APNs checks of the newer push types (CONTRACT §9): a Live Activity push on the
/// `.push-type.liveactivity` topic with `aps.timestamp`, `aps.event` and `content-state` (a
/// start also `attributes-type` and `attributes`), at priority 5 or 10; a widget refresh on the
/// `.push-type.widgets` topic with `aps.content-changed`; a controls refresh the same on
/// `.push-type.controls`.
enum NewerPushTypes {
    /// Apple's reason for refusing the push, or `nil`.
    static func problem(_ headers: [String: String], payload: [String: Any]) -> String? {
        let aps = payload["aps"] as? [String: Any]
        switch headers["apns-push-type"] {
        case "liveactivity":
            // A broadcast names its channel instead of a topic.
            if headers["apns-channel-id"] == nil, !(headers["apns-topic"] ?? "").hasSuffix(".push-type.liveactivity") { return "TopicDisallowed" }
            if let priority = headers["apns-priority"], priority != "5", priority != "10" { return "BadPriority" }
            guard let aps, timestamp(payload) != nil, aps["content-state"] is [String: Any] else { return "BadPayload" }
            switch aps["event"] as? String {
            case "start":
                guard aps["attributes-type"] is String, aps["attributes"] is [String: Any] else { return "BadPayload" }
            case "update", "end":
                break
            default:
                return "BadPayload"
            }
        case "widgets":
            if !(headers["apns-topic"] ?? "").hasSuffix(".push-type.widgets") { return "TopicDisallowed" }
            guard aps?["content-changed"] as? Bool == true else { return "BadPayload" }
        case "controls":
            if !(headers["apns-topic"] ?? "").hasSuffix(".push-type.controls") { return "TopicDisallowed" }
            guard aps?["content-changed"] as? Bool == true else { return "BadPayload" }
        default:
            break
        }
        return nil
    }

    /// `aps.timestamp`, if a whole number.
    static func timestamp(_ payload: [String: Any]) -> Int64? {
        ((payload["aps"] as? [String: Any])?["timestamp"] as? NSNumber).map { $0.int64Value }
    }
}

/// Each Live Activity token's newest `aps.timestamp` (a device shows the newest and ignores an
/// older one), and how many pushes were not newer than the one before: a gateway that keeps
/// order never makes this count grow.
package final class ActivityOrder: Sendable {
    private let state = Mutex((newest: [String: Int64](), outOfOrder: 0))

    func note(token: String, timestamp: Int64) {
        state.withLock { state in
            if let newest = state.newest[token], timestamp <= newest { state.outOfOrder += 1 } else { state.newest[token] = timestamp }
        }
    }

    /// Pushes whose timestamp was not newer than the token's last one.
    package var outOfOrder: Int { state.withLock { $0.outOfOrder } }
}

/// Apple's broadcast channel API as the simulator plays it: `POST|DELETE
/// /1/apps/{bundleId}/channels` (management) and `POST /4/broadcasts/apps/{bundleId}`.
package final class SimulatedChannels: Sendable {
    /// A broadcast the simulator accepted.
    package struct Broadcast: Sendable, Equatable {
        package var bundleId: String
        package var channelId: String
        package var payload: Data
        package var priority: String?
        /// When the simulator accepted it.
        package var receivedAt = Date()
    }

    private struct State {
        var channels: [String: (bundleId: String, storagePolicy: Int)] = [:]
        var broadcasts: [Broadcast] = []
        var withoutCapability: Set<String> = []
    }

    private let state = Mutex(State())

    /// Channels that exist now, by id.
    package var channelIds: Set<String> { state.withLock { Set($0.channels.keys) } }
    /// Broadcasts accepted so far.
    package var broadcasts: [Broadcast] { state.withLock { $0.broadcasts } }

    /// From now on `bundleId` has no broadcast capability: Apple refuses its channels.
    package func removeCapability(bundleId: String) {
        state.withLock { _ = $0.withoutCapability.insert(bundleId) }
    }

    /// Apple drops the channel on its side (as it may for a channel unused for long).
    package func drop(channelId: String) {
        state.withLock { _ = $0.channels.removeValue(forKey: channelId) }
    }

    /// Whether `path` is the channel API's.
    static func serves(_ path: String) -> Bool { path.hasPrefix("/1/apps/") || path.hasPrefix("/4/broadcasts/apps/") }

    func handle(_ request: H2Server.Request) -> H2Server.Response {
        func reject(_ status: Int, _ reason: String) -> H2Server.Response { .json(status, #"{"reason":"\#(reason)"}"#) }
        let parts = request.path.split(separator: "/").map(String.init)
        if parts.count == 4, parts[0] == "1", parts[1] == "apps", parts[3] == "channels" {
            let bundleId = parts[2]
            if state.withLock({ $0.withoutCapability.contains(bundleId) }) { return reject(403, "FeatureNotEnabled") }
            switch request.method {
            case "POST":
                guard let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any],
                      let policy = (body["message-storage-policy"] as? NSNumber)?.intValue, policy == 0 || policy == 1,
                      body["push-type"] as? String == "LiveActivity"
                else { return reject(400, "BadMessageStoragePolicy") }
                let channelId = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
                state.withLock { $0.channels[channelId] = (bundleId, policy) }
                return H2Server.Response(status: 201, headers: ["apns-channel-id": channelId, "apns-request-id": UUID().uuidString.lowercased()])
            case "DELETE":
                guard let channelId = request.headers["apns-channel-id"] else { return reject(400, "MissingChannelId") }
                let removed = state.withLock { $0.channels.removeValue(forKey: channelId) != nil }
                return removed ? H2Server.Response(status: 204) : reject(404, "ChannelNotRegistered")
            default:
                return reject(405, "MethodNotAllowed")
            }
        }
        if parts.count == 4, parts[0] == "4", parts[1] == "broadcasts", parts[2] == "apps", request.method == "POST" {
            let bundleId = parts[3]
            guard let channelId = request.headers["apns-channel-id"] else { return reject(400, "MissingChannelId") }
            guard request.headers["apns-push-type"] == "liveactivity" else { return reject(400, "InvalidPushType") }
            guard let payload = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] else { return reject(400, "BadPayload") }
            if let problem = NewerPushTypes.problem(request.headers, payload: payload) { return reject(400, problem) }
            let known = state.withLock { $0.channels[channelId]?.bundleId == bundleId }
            guard known else { return reject(404, "ChannelNotRegistered") }
            state.withLock { $0.broadcasts.append(Broadcast(bundleId: bundleId, channelId: channelId, payload: request.body,
                                                             priority: request.headers["apns-priority"])) }
            return H2Server.Response(status: 200, headers: ["apns-request-id": UUID().uuidString.lowercased()])
        }
        return reject(404, "BadPath")
    }
}
