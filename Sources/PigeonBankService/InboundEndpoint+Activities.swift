import BankContract
import Foundation
import PigeonCore
import PigeonDomain
import PushCore
import SOAPCodec

/// The bank's Live Activity, broadcast channel and widget operations (CONTRACT §9). Bad values
/// are SOAP faults naming the field, and nothing is stored or pushed for them; what Apple
/// refuses comes back in `status` and `errorMessage`.
extension InboundEndpoint {
    /// The longest `staleAfterSeconds` accepted: eight hours (an activity lives at most eight on the lock screen, then twelve more ended).
    package static let maximumStaleAfterSeconds = 12 * 3600
    /// Apple removes an ended activity at most four hours after its end.
    package static let maximumDismissAfterSeconds = 4 * 3600

    package func startActivity(_ parameters: SOAPRecord) async throws -> InboundResult {
        let store = try activityStore()
        let activityId = try Self.identifier(parameters, "activityId")
        let activityType = try Self.identifier(parameters, "activityType")
        let recipients = parameters.strings("recipients")
        if let blank = recipients.firstIndex(where: { $0.isEmpty }) { throw SOAPFault.client("element 'recipients' number \(blank + 1) is empty") }
        for recipient in recipients { try SOAPFault.refuseControlCharacters(recipient, in: "recipients") }
        let attributes = try Self.object(parameters, "attributes")
        let now = clock()
        var content = try Self.content(parameters, now: now)
        content.relevanceScore = try parameters.int("relevanceScore").map { score throws(SOAPFault) in
            guard (0...1_000_000).contains(score) else { throw .client("element 'relevanceScore' must be 0–1000000, got \(score)") }
            return Double(score)
        }
        try Self.checkSize(LiveActivityEvent(kind: .start, timestamp: Int64(now.timeIntervalSince1970), contentState: content.contentState ?? "{}",
                                             alertTitle: content.alertTitle, alertBody: content.alertBody, staleDate: content.staleDate,
                                             attributesType: activityType, attributes: attributes, relevanceScore: content.relevanceScore),
                           activityId: activityId)
        let start = ActivityStart(activityId: activityId, activityType: activityType, recipients: recipients, attributes: attributes, content: content)
        switch try await store.start(start, now: now) {
        case .duplicate:
            return InboundResult(status: .duplicatedEntity, errorMessage: "activity '\(activityId)' was already started")
        case .started(let states):
            events.activityQueued()
            logger.info("activity started", metadata: ["activity": activityId, "type": activityType, "recipients": String(states.count),
                                                       "noToken": String(states.filter { $0.state == .noToken }.count)])
            return InboundResult(status: .ok).with("activityStatus", .entries(states.map { MapEntry(key: $0.user, value: $0.state.rawValue) }))
        }
    }

    package func updateActivity(_ parameters: SOAPRecord) async throws -> InboundResult {
        let activityId = try Self.identifier(parameters, "activityId")
        let now = clock()
        var content = try Self.content(parameters, now: now)
        content.priority = try parameters.int("priority").map { priority throws(SOAPFault) in
            guard priority == 5 || priority == 10 else { throw .client("element 'priority' must be 5 or 10 for a Live Activity, got \(priority)") }
            return Int(priority)
        }
        return try await event(activityId: activityId, kind: .update, content: content, now: now)
    }

    package func endActivity(_ parameters: SOAPRecord) async throws -> InboundResult {
        let activityId = try Self.identifier(parameters, "activityId")
        let now = clock()
        var content = ActivityContent(contentState: try parameters.string("contentState").map { _ in try Self.object(parameters, "contentState") })
        if let seconds = parameters.int("dismissAfterSeconds") {
            guard (0...Self.maximumDismissAfterSeconds).contains(Int(seconds)) else {
                throw SOAPFault.client("element 'dismissAfterSeconds' must be 0–\(Self.maximumDismissAfterSeconds) (Apple keeps an ended activity at most four hours), got \(seconds)")
            }
            content.dismissalDate = Int64(now.timeIntervalSince1970) + Int64(seconds)
        }
        return try await event(activityId: activityId, kind: .end, content: content, now: now)
    }

    private func event(activityId: String, kind: ActivityPushKind, content: ActivityContent, now: Date) async throws -> InboundResult {
        let store = try activityStore()
        try Self.checkSize(LiveActivityEvent(kind: kind == .end ? .end : .update, timestamp: Int64(now.timeIntervalSince1970),
                                             contentState: content.contentState ?? "{}", alertTitle: content.alertTitle, alertBody: content.alertBody,
                                             staleDate: content.staleDate, dismissalDate: content.dismissalDate),
                           activityId: activityId)
        switch try await store.event(activityId: activityId, kind: kind, content: content, now: now) {
        case .notFound:
            // Acting on an activity that was never started is the caller's mistake: nothing was queued.
            throw SOAPFault.client("element 'activityId' names no activity: '\(activityId)' was never started (startActivity first)")
        case .ended:
            return InboundResult(status: .entityNotFound, errorMessage: "activity '\(activityId)' has ended")
        case .queued(let devices):
            events.activityQueued()
            logger.info("activity \(kind.rawValue) queued", metadata: ["activity": activityId, "devices": String(devices)])
            return InboundResult(status: .ok)
        }
    }

    package func getActivityStatus(_ parameters: SOAPRecord) async throws -> InboundResult {
        let store = try activityStore()
        let activityId = try Self.identifier(parameters, "activityId")
        guard let states = try await store.status(activityId: activityId) else {
            return InboundResult(status: .entityNotFound, errorMessage: "no activity '\(activityId)'")
        }
        return InboundResult(status: .ok).with("activityStatus", .entries(states.map { MapEntry(key: $0.user, value: $0.state.rawValue) }))
    }

    package func refreshWidgets(_ parameters: SOAPRecord) async throws -> InboundResult {
        let store = try activityStore()
        return try await refresh(parameters, what: "widget", devicesNamed: "iPhone or Android device") { try await store.refreshWidgets(users: $0) }
    }

    package func refreshControls(_ parameters: SOAPRecord) async throws -> InboundResult {
        let store = try activityStore()
        return try await refresh(parameters, what: "controls", devicesNamed: "iPhone") { try await store.refreshControls(users: $0) }
    }

    /// Queues a refresh for the recipients' devices; ENTITY_NOT_FOUND when none has one.
    private func refresh(_ parameters: SOAPRecord, what: String, devicesNamed: String,
                         queue: ([String]) async throws -> [(user: String, devices: Int)]) async throws -> InboundResult {
        let recipients = parameters.strings("recipients")
        if let blank = recipients.firstIndex(where: { $0.isEmpty }) { throw SOAPFault.client("element 'recipients' number \(blank + 1) is empty") }
        for recipient in recipients { try SOAPFault.refuseControlCharacters(recipient, in: "recipients") }
        let devices = try await queue(recipients).reduce(0) { $0 + $1.devices }
        guard devices > 0 else {
            return InboundResult(status: .entityNotFound, errorMessage: "no recipient has a subscribed \(devicesNamed)")
        }
        events.activityQueued()
        logger.info("\(what) refresh queued", metadata: ["recipients": String(recipients.count), "devices": String(devices)])
        return InboundResult(status: .ok)
    }

    // MARK: Broadcast channels

    package func createActivityChannel(_ parameters: SOAPRecord) async throws -> InboundResult {
        let channels = try activityChannels()
        let activityType = try Self.identifier(parameters, "activityType")
        let policy = parameters.int("storagePolicy") ?? -1
        guard policy == 0 || policy == 1 else {
            throw SOAPFault.client("element 'storagePolicy' must be 0 (no message stored) or 1 (the most recent message stored), got \(policy)")
        }
        let appId = parameters.string("appId").map { $0 == "default" ? PushRoute.defaultApp : $0 } ?? PushRoute.defaultApp
        switch try await channels.create(appId: appId, activityType: activityType, storagePolicy: Int(policy)) {
        case .success(let channelId): return InboundResult(status: .ok).with("channelId", .string(channelId))
        case .failure(let failure): return Self.result(failure)
        }
    }

    package func deleteActivityChannel(_ parameters: SOAPRecord) async throws -> InboundResult {
        let channels = try activityChannels()
        let channelId = try Self.channelId(parameters)
        switch try await channels.delete(channelId: channelId) {
        case .success: return InboundResult(status: .ok)
        case .failure(let failure): return Self.result(failure)
        }
    }

    package func broadcastActivityUpdate(_ parameters: SOAPRecord) async throws -> InboundResult {
        let channels = try activityChannels()
        let channelId = try Self.channelId(parameters)
        let now = clock()
        let content = try Self.content(parameters, now: now)
        let event = LiveActivityEvent(kind: parameters.boolean("end") == true ? .end : .update, timestamp: Int64(now.timeIntervalSince1970),
                                      contentState: content.contentState ?? "{}", alertTitle: content.alertTitle, alertBody: content.alertBody,
                                      staleDate: content.staleDate)
        do {
            _ = try LiveActivityRequests.broadcast(event, channelId: channelId)
        } catch {
            throw SOAPFault.client("the broadcast's payload (contentState and alert) is over APNs' limit: \(error.description)")
        }
        switch try await channels.broadcast(channelId: channelId, event: event, now: now) {
        case .success: return InboundResult(status: .ok)
        case .failure(let failure): return Self.result(failure)
        }
    }

    // MARK: Fields

    private func activityStore() throws(SOAPFault) -> any ActivityKeeping {
        guard let activities else { throw SOAPFault.server("Live Activities are not available on this gateway") }
        return activities
    }

    private func activityChannels() throws(SOAPFault) -> any BroadcastChannels {
        guard let channels else { throw SOAPFault.server("broadcast channels need APNs (apnsKeyPath or apnsCertificatePath, with apnsTopic)") }
        return channels
    }

    private static func result(_ failure: BroadcastChannelFailure) -> InboundResult {
        switch failure {
        case .notFound(let message): InboundResult(status: .entityNotFound, errorMessage: message)
        case .refused(let message): InboundResult(status: .internalServerError, errorMessage: message)
        }
    }

    private static func identifier(_ parameters: SOAPRecord, _ name: String) throws(SOAPFault) -> String {
        let value = parameters.string(name) ?? ""
        if let problem = ActivityFields.identifierProblem(value, name: "element '\(name)'") { throw .client(problem) }
        return value
    }

    private static func channelId(_ parameters: SOAPRecord) throws(SOAPFault) -> String {
        let value = parameters.string("channelId") ?? ""
        if let problem = ActivityFields.channelIdProblem(value, name: "element 'channelId'") { throw .client(problem) }
        return value
    }

    private static func object(_ parameters: SOAPRecord, _ name: String) throws(SOAPFault) -> String {
        let value = parameters.string(name) ?? ""
        if let problem = ActivityFields.objectProblem(value, name: "element '\(name)'") { throw .client(problem) }
        return value
    }

    /// `contentState`, the alert and `staleAfterSeconds` of an event.
    private static func content(_ parameters: SOAPRecord, now: Date) throws(SOAPFault) -> ActivityContent {
        var content = ActivityContent(contentState: try object(parameters, "contentState"),
                                      alertTitle: parameters.string("alertTitle"), alertBody: parameters.string("alertBody"))
        if let seconds = parameters.int("staleAfterSeconds") {
            guard (1...maximumStaleAfterSeconds).contains(Int(seconds)) else {
                throw .client("element 'staleAfterSeconds' must be 1–\(maximumStaleAfterSeconds), got \(seconds)")
            }
            content.staleDate = Int64(now.timeIntervalSince1970) + Int64(seconds)
        }
        return content
    }

    /// Refuses an event whose APNs payload or Android data message would be over 4 KB.
    private static func checkSize(_ event: LiveActivityEvent, activityId: String) throws(SOAPFault) {
        do {
            _ = try LiveActivityRequests.activity(event, appTopic: "")
            let data = LiveActivityRequests.androidData(activityId: activityId, event: event, expiresAt: Date().addingTimeInterval(3600))
            _ = try FCMRequestBuilder(projectId: "p").prepare(data, now: Date())
        } catch {
            throw .client("the activity's payload (attributes, contentState and alert together) is over the push services' limit: \(error.description)")
        }
    }
}
