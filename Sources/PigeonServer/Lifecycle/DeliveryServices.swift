import BankProxy
import Foundation
import PigeonConfiguration
import PigeonDomain
import PigeonCrypto
import PigeonDelivery
import PigeonStore
import PushCore
import PushTransport

// The gateway's stores and transports are the delivery engine's seams.

extension DeliveryQueue: DeliveryQueueing {}
extension NotificationStore: NotificationSource {}
extension SubscriptionStore: DeviceDirectory {}

extension APNsTransport: PushSending {
    package func send(_ message: PushMessage, to token: String) async -> PushOutcome {
        await send(message, to: token, apnsId: UUID())
    }
}

// Every service but APNs (whose provider-token schedule is its own) is a ServiceTransport.
extension ServiceTransport: PushSending {}

extension DeliveryEngine.Configuration {
    /// The engine settings of `server.conf`.
    init(_ delivery: GatewayConfiguration.Delivery) {
        self.init()
        batchSize = delivery.batchSize
        lease = .seconds(delivery.leaseSeconds)
        // Each batch may use the whole window; each service and app's clients hold its pushes in
        // flight to `deliveryConcurrency` (PushTransports), whatever the number of batches.
        maxConcurrentPushes = delivery.concurrency
        urgentPriority = delivery.urgentPriority
    }
}


extension Outbox: ReportQueue {}
extension PassStore: PassUpdateQueueing {}
extension ActivityStore: ActivityQueueing {}
extension Sweeps: SweepJobs {}

extension Sweeps: DeadlineJobs {
    package func expireDue() async throws -> SweepStep {
        try await expireNewestFirst()
    }
}
extension Retention: HistoryKeeping {}

extension BankProxyClient: BankReporting {
    package func send(_ report: BankReport) async throws {
        switch report {
        case .pushIsOpened(let id, let user):
            try await pushIsOpened(notificationId: id, user: user)
        case .notificationExpired(let id, let users, _):
            try await reportNotificationExpired(notificationId: id, users: users)
        case .passUpdateNotFetched(let pass, let count):
            try await reportPassUpdateNotFetched(passTypeIdentifier: pass.passTypeIdentifier, serialNumber: pass.serialNumber, deviceCount: count)
        }
    }
}

/// The gateway's sealer of confidential notifications: CONTRACT §8 on OpenSSL.
struct OpenSSLContentSealer: ContentSealing {
    func seal(_ content: Data, to key: DeviceEncryptionKey, notificationId: String) throws -> E2EEnvelope {
        let sealed = try ConfidentialSealing.seal(content, keyId: key.keyId, devicePublicKey: key.publicKey, additionalData: Data(notificationId.utf8))
        return E2EEnvelope(keyId: key.keyId, ephemeralPublicKey: sealed.ephemeralPublicKey, salt: sealed.salt, ciphertext: sealed.ciphertext)
    }
}
