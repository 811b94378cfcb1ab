import Foundation
import PigeonDomain
import PushCore

/// The pushes of one claimed batch: one per (delivery, subscribed device), each notification's
/// message built once and shared by all of its deliveries.
struct PushPlan {
    struct Push {
        /// The index of the delivery in ``claims``.
        var claim: Int
        var device: Device
        /// The index of its message in ``messages``.
        var message: Int
    }

    var claims: [ClaimedDelivery]
    /// One message per notification of the batch.
    var messages: [PushMessage] = []
    var notifications: [Int64: PushNotification]
    var pushes: [Push] = []
    /// How many pushes each delivery has.
    var pushCounts: [Int]
    /// Deliveries with no push at all (no subscribed device, or the notification is gone):
    /// decided at once.
    var claimsWithoutPushes: [Int] = []

    /// Confidential pushes planned, by push service and mode (`encrypted`, `fetch`).
    var confidentialCounts: [ConfidentialCount: Int] = [:]
    /// Devices whose key could not seal a push (told to fetch instead), with the reason.
    var sealingFailures: [(device: Device, reason: String)] = []

    struct ConfidentialCount: Hashable {
        var service: String
        var mode: String
    }

    init(claims: [ClaimedDelivery], notifications: [Int64: PushNotification], devices: [String: [Device]],
         key: (String) -> String, confidential: ConfidentialPushing = ConfidentialPushing(sealer: nil)) {
        self.claims = claims
        self.notifications = notifications
        pushCounts = Array(repeating: 0, count: claims.count)
        var messageIndex: [Int64: Int] = [:]
        // A confidential notification's plaintext, built once and sealed for each keyed device.
        var sealedContents: [Int64: Data] = [:]
        for (index, claim) in claims.enumerated() {
            guard let notification = notifications[claim.notificationKey] else {
                claimsWithoutPushes.append(index)
                continue
            }
            // A notification's deliveries share its expiry, so one message serves all of them
            // (for a confidential one: every device without a key; each keyed device has its own).
            let message = messageIndex[claim.notificationKey] ?? messages.count
            if message == messages.count {
                messages.append(Self.message(for: notification, expiresAt: claim.expiresAt, confidential: confidential))
                messageIndex[claim.notificationKey] = message
            }
            // A retry pushes only the devices that failed temporarily (those still subscribed).
            var userDevices = devices[key(claim.userId)] ?? []
            if let pending = claim.pendingDevices.map(Set.init) { userDevices.removeAll { !pending.contains($0.id) } }
            if userDevices.isEmpty { claimsWithoutPushes.append(index) }
            for device in userDevices {
                var deviceMessage = message
                if notification.isConfidential {
                    let content = sealedContents[claim.notificationKey] ?? Self.sealedContent(of: notification)
                    sealedContents[claim.notificationKey] = content
                    if let sealed = sealedMessage(notification, content: content, for: device, shared: messages[message], confidential: confidential) {
                        deviceMessage = messages.count
                        messages.append(sealed)
                    }
                    let mode = messages[deviceMessage].confidential?.label ?? "fetch"
                    confidentialCounts[ConfidentialCount(service: device.platform.pushService, mode: mode), default: 0] += 1
                }
                pushes.append(Push(claim: index, device: device, message: deviceMessage))
            }
            pushCounts[index] = userDevices.count
        }
    }

    /// The message of a confidential notification sealed to `device`'s key: `shared` (the
    /// neutral `fetch` message) with the envelope; `nil` when the device has no key or the
    /// sealing failed (noted in ``sealingFailures``: the device is told to fetch).
    private mutating func sealedMessage(_ notification: PushNotification, content: Data, for device: Device, shared: PushMessage,
                                        confidential: ConfidentialPushing) -> PushMessage? {
        guard let key = device.encryptionKey, let sealer = confidential.sealer else { return nil }
        do {
            var message = shared
            message.confidential = .encrypted(try sealer.seal(content, to: key, notificationId: notification.id))
            return message
        } catch {
            sealingFailures.append((device, "\(error)"))
            return nil
        }
    }

    /// What a confidential notification's sealed pushes carry (CONTRACT §8).
    static func sealedContent(of notification: PushNotification) -> Data {
        SealedContent.json(
            notificationId: notification.id, text: notification.pushContent.text, type: notification.pushContent.type.rawValue,
            target: notification.pushContent.target, details: notification.details?.map { ($0.key, $0.value) })
    }

    /// The routes of each claim's pushes (empty for a claim without pushes).
    var routesOfClaims: [Set<PushRoute>] {
        var routes = [Set<PushRoute>](repeating: [], count: claims.count)
        for push in pushes { routes[push.claim].insert(push.device.route) }
        return routes
    }

    /// The plan of the claims at `indices` only, with the same messages.
    func keeping(_ indices: [Int]) -> PushPlan {
        var plan = self
        var newIndex = [Int?](repeating: nil, count: claims.count)
        for (position, index) in indices.enumerated() { newIndex[index] = position }
        plan.claims = indices.map { claims[$0] }
        plan.pushCounts = indices.map { pushCounts[$0] }
        plan.claimsWithoutPushes = claimsWithoutPushes.compactMap { newIndex[$0] }
        plan.pushes = pushes.compactMap { push in
            newIndex[push.claim].map { Push(claim: $0, device: push.device, message: push.message) }
        }
        return plan
    }

    /// The batch of each route's pushes (platform, app, environment) among those `included`,
    /// each to start by `startBy`; `pushes` maps a batch's push back to ``pushes``.
    func batches(startBy: Date? = nil, of included: (Int) -> Bool = { _ in true }) -> [(route: PushRoute, batch: PushBatch, pushes: [Int])] {
        var byRoute: [PushRoute: [Int]] = [:]
        for (index, push) in pushes.enumerated() where included(index) { byRoute[push.device.route, default: []].append(index) }
        return byRoute.sorted { $0.key.description < $1.key.description }.map { route, indices in
            let batch = PushBatch(messages: messages, pushes: indices.map {
                PushBatch.Push(message: pushes[$0].message, token: pushes[$0].device.pushToken)
            }, startBy: startBy).compacted()
            return (route, batch, indices)
        }
    }

    /// The push for a notification: its text, badge and sound, with id, type and target for the
    /// app. A confidential one's carries none of its content: the neutral alert, to be fetched
    /// (the sealed messages are this one with an envelope).
    static func message(for notification: PushNotification, expiresAt: Date,
                        confidential: ConfidentialPushing = ConfidentialPushing(sealer: nil)) -> PushMessage {
        if notification.isConfidential {
            return PushMessage(notificationId: notification.id, text: confidential.alertText, badge: notification.pushContent.badge,
                               sound: "default", urgency: .high, expiresAt: expiresAt, confidential: .fetch,
                               interruptionLevel: notification.interruptionLevel?.rawValue)
        }
        var data = ["type": notification.pushContent.type.rawValue]
        if let target = notification.pushContent.target { data["target"] = target }
        let urgent = notification.pushContent.type == .pinCode || (notification.priority ?? 0) > 0
        return PushMessage(
            notificationId: notification.id, text: notification.pushContent.text, badge: notification.pushContent.badge,
            sound: notification.pushContent.sound, data: data, urgency: urgent ? .high : .normal, expiresAt: expiresAt,
            interruptionLevel: notification.interruptionLevel?.rawValue)
    }
}
