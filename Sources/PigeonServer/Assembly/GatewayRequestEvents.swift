import Foundation
import PigeonDelivery
import PigeonDomain

/// What the gateway's requests wake: a stored send wakes the delivery engine (its urgent lane
/// for a code) and notes its deadline for the expiry watcher; a queued activity push wakes the
/// activity engine; a report queued with a send wakes the outbox sender.
struct GatewayRequestEvents: RequestEvents {
    let deliveries: QueueWake
    let deadlines: DeadlineNotes
    let activities: WakeSignal
    let reports: WakeSignal

    func notificationStored(_ notification: PushNotification, expiresAt: Date) {
        deliveries.stored(priority: notification.priority ?? 0)
        deadlines.note(deadline: expiresAt)
    }

    func activityQueued() { activities.signal() }

    func reportsQueued() { reports.signal() }
}
