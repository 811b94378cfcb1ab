import Foundation

/// What a request tells the gateway's background work, so that it acts at once instead of at its
/// next look: the bank's SOAP service and the device API call it after their writes committed.
/// The gateway wakes its engines and notes deadlines; tests record the calls.
package protocol RequestEvents: Sendable {
    /// A notification was stored (never for a duplicate); its deliveries expire at `expiresAt`.
    func notificationStored(_ notification: PushNotification, expiresAt: Date)
    /// Activity pushes became due: a Live Activity event, a widget or controls refresh, or an
    /// update token that waiting events were held for.
    func activityQueued()
    /// Reports to the bank were queued with a request (a send's recipients without a device).
    func reportsQueued()
}

/// Events nobody listens to: for endpoints built without background work.
package struct IgnoredRequestEvents: RequestEvents {
    package init() {}
    package func notificationStored(_ notification: PushNotification, expiresAt: Date) {}
    package func activityQueued() {}
    package func reportsQueued() {}
}
