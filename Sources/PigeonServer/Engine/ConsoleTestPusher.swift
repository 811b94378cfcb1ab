import Foundation
import PigeonConsole
import PigeonCore
import PigeonDelivery
import PigeonDomain
import PigeonStore
import PushCore

/// The console's test push (CONTRACT §10): a neutral alert to each of a user's devices through the
/// urgent lane's senders, answered per device once its push service has answered (at most
/// ``ConsoleTestPush/timeout``). Nothing is stored as a notification, nothing is reported to the
/// bank, and a token the service calls dead is reported, not removed (the next real push does that).
struct ConsoleTestPusher: Sendable {
    let subscriptions: SubscriptionStore
    let senders: [PushRoute: any PushSending]

    func push(user: String) async throws -> [ConsoleTestPush] {
        let devices = Array(try await subscriptions.devices(user: user).prefix(50))
        let id = "console-test-" + UUID().uuidString.lowercased()
        let message = PushMessage(notificationId: id, text: ConsoleTestPush.text, sound: "default", data: ["type": "UNIVERSAL"],
                                  urgency: .high, expiresAt: Date().addingTimeInterval(60))
        return await withTaskGroup(of: (Int, ConsoleTestPush).self) { group in
            for (index, device) in devices.enumerated() {
                let sender = senders[device.route]
                group.addTask {
                    guard let sender else {
                        return (index, ConsoleTestPush(deviceId: device.deviceId, state: "NOT_SERVED", lastError: "no push service of this gateway serves \(device.route)"))
                    }
                    return (index, Self.outcome(await BoundedWait.value(within: ConsoleTestPush.timeout) { await sender.send(message, to: device.pushToken) }, device))
                }
            }
            var results = [ConsoleTestPush?](repeating: nil, count: devices.count)
            for await (index, result) in group { results[index] = result }
            return results.compactMap { $0 }
        }
    }

    private static func outcome(_ outcome: PushOutcome?, _ device: Device) -> ConsoleTestPush {
        switch outcome {
        case .accepted?: ConsoleTestPush(deviceId: device.deviceId, state: "SENT")
        case .tokenDead(let reason, _)?: ConsoleTestPush(deviceId: device.deviceId, state: "INVALID_TOKEN", lastError: reason)
        case .retry(let reason, _, _)?, .refreshCredentials(let reason)?, .failed(let reason)?:
            ConsoleTestPush(deviceId: device.deviceId, state: "FAILED", lastError: reason)
        case .expired?, .deferred?: ConsoleTestPush(deviceId: device.deviceId, state: "FAILED", lastError: "not pushed in time")
        case nil: ConsoleTestPush(deviceId: device.deviceId, state: "TIMEOUT", lastError: "the push service did not answer within \(ConsoleTestPush.timeout)")
        }
    }
}
