import BankContract
import Foundation
import PigeonCore
import PigeonDomain
import PigeonCrypto
import PigeonHTTP
import SOAPCodec

/// The SOAP service the bank calls (CONTRACT §1): decodes, runs the operation against the store,
/// answers. Business outcomes are `return/status`; bad requests are SOAP Faults with HTTP 500,
/// and nothing is stored for them.
package struct InboundEndpoint: Sendable {
    package static let path = "/pigeon/services/SBIInboundWebService"
    /// The request headers this service reads: the WSDL's address from `Host`, the SOAP version
    /// from `Content-Type` (the listener copies no others).
    package static let requestHeaders: Set<String> = ["host", "content-type"]

    package let codec: SOAPCodec
    package let wsdl = WSDLGenerator(service: InboundService.description)
    package let notifications: any NotificationRecording
    package let subscriptions: any SubscriptionKeeping
    package let passes: any PassKeeping
    /// Signers of the pass types with a certificate, for passes sent unsigned.
    package let passSigners: [String: PassSigner]
    /// Push types always sent confidential (`confidentialTypes`).
    package let confidentialTypes: Set<PushType>
    /// Told of every notification stored (not of a duplicate) and the moment its deliveries
    /// expire, of activity pushes queued, and of reports to the bank queued with a send (CONTRACT
    /// §10): wakes the engines and the outbox sender, and notes deadlines for the expiry watcher.
    package let events: any RequestEvents
    package let logger: Logger
    package let metrics: MetricsRegistry
    /// Live Activities and widget refreshes (CONTRACT §9); `nil`: the operations answer a fault.
    package let activities: (any ActivityKeeping)?
    /// Broadcast channels; `nil` without APNs.
    package let channels: (any BroadcastChannels)?
    package var clock: @Sendable () -> Date = Date.init

    /// `maxRequestBytes` sizes the XML limits: a send of any size within it is decoded.
    package init(notifications: any NotificationRecording, subscriptions: any SubscriptionKeeping, passes: any PassKeeping, passSigners: [String: PassSigner] = [:],
         maxRequestBytes: Int, confidentialTypes: Set<PushType> = [], activities: (any ActivityKeeping)? = nil,
         channels: (any BroadcastChannels)? = nil, events: any RequestEvents = IgnoredRequestEvents(), logger: Logger, metrics: MetricsRegistry) {
        self.confidentialTypes = confidentialTypes
        self.activities = activities
        self.channels = channels
        self.events = events
        self.codec = SOAPCodec(service: InboundService.description, limits: .init(forDocumentsUpTo: maxRequestBytes))
        self.notifications = notifications
        self.subscriptions = subscriptions
        self.passes = passes
        self.passSigners = passSigners
        self.logger = logger
        self.metrics = metrics
    }

    /// `GET …?wsdl`: the WSDL with the address built from the request's Host header.
    package func describe(_ request: HTTPRequest, scheme: String) -> HTTPResponse {
        let host = request.header("host") ?? "localhost"
        let address = "\(scheme)://\(host)\(Self.path)"
        return .text(200, wsdl.wsdl(address: address), contentType: "text/xml; charset=utf-8")
    }

    /// `POST`: one operation.
    package func call(_ request: HTTPRequest) async -> HTTPResponse {
        let contentType = request.header("content-type")
        let decoded: SOAPRequest
        do {
            // Taken, the body's memory goes once decoded, not after the answer is written.
            decoded = try codec.decodeRequest(request.takeBody(), contentType: contentType)
        } catch {
            metrics.increment(Metric.soapFaultsTotal, labels: ["operation": "unknown"])
            logger.info("SOAP request refused", metadata: ["reason": error.fault.reason, "peer": request.peer])
            return fault(error.fault, version: error.version)
        }
        let operation = decoded.operation
        do {
            let result = try await perform(decoded)
            metrics.increment(Metric.soapCallsTotal, labels: ["operation": operation.name, "status": result.record.string("status") ?? ""])
            return HTTPResponse(
                status: 200, headers: [("Content-Type", decoded.version.contentType)],
                body: codec.encodeResponse(operation, result: result.record, version: decoded.version))
        } catch let error as SOAPFault {
            metrics.increment(Metric.soapFaultsTotal, labels: ["operation": operation.name])
            logger.info("SOAP request refused", metadata: ["operation": operation.name, "reason": error.reason, "peer": request.peer])
            return fault(error, version: decoded.version)
        } catch {
            metrics.increment(Metric.soapCallsTotal, labels: ["operation": operation.name, "status": "INTERNAL_SERVER_ERROR"])
            logger.error("SOAP operation failed", metadata: ["operation": operation.name, "error": "\(error)"])
            let result = InboundResult(status: .internalServerError, errorMessage: "the gateway could not complete \(operation.name); see its log")
            return HTTPResponse(
                status: 200, headers: [("Content-Type", decoded.version.contentType)],
                body: codec.encodeResponse(operation, result: result.record, version: decoded.version))
        }
    }

    private func fault(_ fault: SOAPFault, version: SOAPVersion) -> HTTPResponse {
        HTTPResponse(status: 500, headers: [("Content-Type", version.contentType)], body: codec.encodeFault(fault, version: version))
    }

    /// Each recipient's state as an entry of the answer's map.
    private static func entries(_ states: [RecipientState]) -> [MapEntry] {
        states.map { MapEntry(key: $0.user, value: $0.state.rawValue) }
    }

    private func perform(_ request: SOAPRequest) async throws -> InboundResult {
        let parameters = request.parameters
        switch request.operation.name {
        case InboundService.sendNotification.name:
            let message = try NotificationMessage(sendNotification: request)
            var notification = PushNotification(message)
            if confidentialTypes.contains(notification.pushContent.type) { notification.confidential = true }
            if notification.isConfidential, notification.pushContent.text.utf8.count > PushNotification.maximumConfidentialTextBytes {
                throw SOAPFault.client("element 'notification/pushContent/text' of a confidential notification is at most "
                    + "\(PushNotification.maximumConfidentialTextBytes) UTF-8 bytes, got \(notification.pushContent.text.utf8.count)")
            }
            switch try await notifications.send(notification) {
            case .stored(let states, let expiresAt):
                events.notificationStored(notification, expiresAt: expiresAt)
                if states.contains(where: { $0.state == .invalidSubscription }) { events.reportsQueued() }
                logger.info("notification stored", metadata: ["id": message.id, "recipients": String(states.count)])
                return InboundResult(status: .ok).with(deliveryStatus: Self.entries(states))
            case .duplicate(let states):
                return InboundResult(status: .duplicatedEntity, errorMessage: "notification '\(message.id)' was already sent")
                    .with(deliveryStatus: Self.entries(states))
            }
        case InboundService.getNotificationDetails.name:
            let id = parameters.string("id") ?? ""
            try SOAPFault.refuseControlCharacters(id, in: "id")
            guard let notification = try await notifications.notification(id: id, recipients: true) else {
                return InboundResult(status: .entityNotFound, errorMessage: "no notification with id '\(id)'")
            }
            return InboundResult(status: .ok).with(notification: NotificationMessage(notification))
        case InboundService.getDeliveryStatus.name:
            let id = parameters.string("id") ?? ""
            try SOAPFault.refuseControlCharacters(id, in: "id")
            guard let states = try await notifications.deliveryStatus(id: id) else {
                return InboundResult(status: .entityNotFound, errorMessage: "no notification with id '\(id)'")
            }
            return InboundResult(status: .ok).with(deliveryStatus: Self.entries(states))
        case InboundService.deleteSubscription.name:
            let user = parameters.string("user") ?? ""
            try SOAPFault.refuseControlCharacters(user, in: "user")
            let deleted = try await subscriptions.deleteAll(user: user)
            guard deleted > 0 else {
                return InboundResult(status: .entityNotFound, errorMessage: "user '\(user)' has no subscription")
            }
            logger.info("subscriptions deleted", metadata: ["devices": String(deleted)])
            return InboundResult(status: .ok)
        case InboundService.checkSubscriptionExists.name:
            let users = parameters.strings("user")
            for user in users { try SOAPFault.refuseControlCharacters(user, in: "user") }
            return InboundResult(status: .ok).with(exists: try await subscriptions.exist(users: users))
        case InboundService.updatePass.name:
            return try await updatePass(parameters)
        case InboundService.getPassStatus.name:
            return try await getPassStatus(parameters)
        case InboundService.startActivity.name:
            return try await startActivity(parameters)
        case InboundService.updateActivity.name:
            return try await updateActivity(parameters)
        case InboundService.endActivity.name:
            return try await endActivity(parameters)
        case InboundService.getActivityStatus.name:
            return try await getActivityStatus(parameters)
        case InboundService.refreshWidgets.name:
            return try await refreshWidgets(parameters)
        case InboundService.refreshControls.name:
            return try await refreshControls(parameters)
        case InboundService.createActivityChannel.name:
            return try await createActivityChannel(parameters)
        case InboundService.deleteActivityChannel.name:
            return try await deleteActivityChannel(parameters)
        case InboundService.broadcastActivityUpdate.name:
            return try await broadcastActivityUpdate(parameters)
        default:
            throw SOAPFault.client("unknown operation '\(request.operation.name)'")
        }
    }
}

extension PushNotification {
    /// The domain notification of a decoded SOAP message (its enums already validated).
    package init(_ message: NotificationMessage) {
        self.init(
            id: message.id,
            recipients: message.recipients,
            timeoutSeconds: Int(message.timeout),
            pushContent: PushContent(
                badge: message.pushContent.badge.map(Int.init),
                sound: message.pushContent.sound,
                text: message.pushContent.text,
                type: PushType(rawValue: message.pushContent.type) ?? .universal,
                details: message.pushContent.details.map { KeyValue($0.key, $0.value) }),
            details: message.details?.map { KeyValue($0.key, $0.value) },
            perishable: message.perishable,
            priority: message.priority.map(Int.init),
            confidential: message.confidential,
            interruptionLevel: message.interruptionLevel.flatMap(InterruptionLevel.init(rawValue:)))
    }
}

extension NotificationMessage {
    /// The SOAP message of a stored notification, as it was sent.
    package init(_ notification: PushNotification) {
        self.init(
            confidential: notification.confidential,
            details: notification.details?.map { MapEntry(key: $0.key, value: $0.value) },
            id: notification.id,
            interruptionLevel: notification.interruptionLevel?.rawValue,
            perishable: notification.perishable,
            priority: notification.priority.map { Int32(clamping: $0) },
            pushContent: PushContentMessage(
                badge: notification.pushContent.badge.map { Int32(clamping: $0) },
                details: notification.pushContent.details.map { MapEntry(key: $0.key, value: $0.value) },
                sound: notification.pushContent.sound,
                text: notification.pushContent.text,
                type: notification.pushContent.type.rawValue),
            recipients: notification.recipients,
            timeout: Int32(clamping: notification.timeoutSeconds))
    }
}
