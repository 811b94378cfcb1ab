import Foundation
import OutboundHTTP
import PigeonBankService
import PigeonCore
import PigeonDomain
import PigeonStore
import PushCore
import PushTransport

/// Broadcast channels (CONTRACT §9, iOS 18): created and deleted through Apple's channel
/// management API (its own host and port, the app's provider token), broadcast to through
/// APNs' `/4/broadcasts/apps/{bundleId}`. Stored so a broadcast finds its app and gets a
/// timestamp larger than the channel's last one. Every refusal comes back as a message naming
/// Apple's reason, for the bank's answer.
struct ActivityChannels: BroadcastChannels {
    typealias Failure = BroadcastChannelFailure

    /// An app's APNs for channels: its transport, the channel management API's base URL and
    /// its bundle id.
    struct App: Sendable {
        var appId: String
        var transport: APNsTransport
        var channelEndpoint: String
        var bundleId: String
    }

    let apps: [App]
    let store: ActivityStore
    let metrics: MetricsRegistry
    let logger: Logger

    func create(appId: String, activityType: String, storagePolicy: Int) async throws -> Result<String, Failure> {
        guard let app = app(appId) else {
            return .failure(.refused("app '\(appId.isEmpty ? "default" : appId)' has no APNs key or certificate with an apnsTopic here"))
        }
        let body = JSONValue.object([("message-storage-policy", .int(storagePolicy)), ("push-type", .string("LiveActivity"))]).encoded
        let answer = await app.transport.call(method: "POST", url: app.channelEndpoint + "/1/apps/\(app.bundleId)/channels",
                                              headers: ["content-type": "application/json"], body: body)
        switch answer {
        case .success(let response) where (200..<300).contains(response.status):
            guard let channelId = response.headers["apns-channel-id"], ActivityFields.channelIdProblem(channelId, name: "channel") == nil else {
                return counted("create", .failure(.refused("Apple created no channel id (status \(response.status))")))
            }
            try await store.saveChannel(.init(channelId: channelId, appId: appId, activityType: activityType, storagePolicy: storagePolicy))
            logger.info("broadcast channel created", metadata: ["channel": channelId, "activityType": activityType, "app": appId])
            return counted("create", .success(channelId))
        case .success(let response):
            return counted("create", .failure(.refused("Apple refused to create the channel: \(Self.reason(response))")))
        case .failure(let failure):
            return counted("create", .failure(.refused("Apple's channel management API cannot be reached: \(failure.message)")))
        }
    }

    func delete(channelId: String) async throws -> Result<Void, Failure> {
        guard let channel = try await store.channel(id: channelId) else { return .failure(.notFound("no channel '\(channelId)'")) }
        guard let app = app(channel.appId) else { return .failure(.refused("the channel's app '\(channel.appId)' is not served here")) }
        let answer = await app.transport.call(method: "DELETE", url: app.channelEndpoint + "/1/apps/\(app.bundleId)/channels",
                                              headers: ["apns-channel-id": channelId], body: Data())
        switch answer {
        case .success(let response) where (200..<300).contains(response.status) || response.status == 404 || response.status == 410:
            try await store.deleteChannel(id: channelId)
            logger.info("broadcast channel deleted", metadata: ["channel": channelId, "appleStatus": String(response.status)])
            return counted("delete", .success(()))
        case .success(let response):
            return counted("delete", .failure(.refused("Apple refused to delete the channel: \(Self.reason(response))")))
        case .failure(let failure):
            return counted("delete", .failure(.refused("Apple's channel management API cannot be reached: \(failure.message)")))
        }
    }

    /// Broadcasts `event` (its timestamp is set here) on the channel.
    func broadcast(channelId: String, event: LiveActivityEvent, now: Date) async throws -> Result<Void, Failure> {
        guard let channel = try await store.channel(id: channelId) else { return .failure(.notFound("no channel '\(channelId)'")) }
        guard let app = app(channel.appId) else { return .failure(.refused("the channel's app '\(channel.appId)' is not served here")) }
        guard let timestamp = try await store.nextChannelTimestamp(id: channelId, now: now) else {
            return .failure(.notFound("no channel '\(channelId)'"))
        }
        var event = event
        event.timestamp = timestamp
        let prepared: APNsPreparedMessage
        do {
            prepared = try LiveActivityRequests.broadcast(event, channelId: channelId)
        } catch {
            return .failure(.refused(error.description))
        }
        let answer = await app.transport.call(method: "POST", path: "/4/broadcasts/apps/\(app.bundleId)", headers: prepared.headers, body: prepared.body)
        switch answer {
        case .success(let response) where (200..<300).contains(response.status):
            return counted("broadcast", .success(()))
        case .success(let response) where response.status == 404 || response.status == 410:
            // Apple no longer has the channel: forget it too.
            try await store.deleteChannel(id: channelId)
            return counted("broadcast", .failure(.notFound("Apple no longer has channel '\(channelId)': \(Self.reason(response))")))
        case .success(let response):
            return counted("broadcast", .failure(.refused("Apple refused the broadcast: \(Self.reason(response))")))
        case .failure(let failure):
            return counted("broadcast", .failure(.refused("APNs cannot be reached: \(failure.message)")))
        }
    }

    private func app(_ id: String) -> App? { apps.first { $0.appId == id } }

    private func counted<T>(_ operation: String, _ result: Result<T, Failure>) -> Result<T, Failure> {
        let label = switch result {
        case .success: "ok"
        case .failure(.notFound): "not_found"
        case .failure(.refused): "refused"
        }
        metrics.increment(Metric.activityBroadcastsTotal, labels: ["operation": operation, "result": label])
        return result
    }

    /// Apple's status and `reason`.
    private static func reason(_ response: HTTP2Client.Response) -> String {
        let reason = ((try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any])?["reason"] as? String
        return "\(response.status) \(reason ?? "")".trimmingCharacters(in: .whitespaces)
    }
}
