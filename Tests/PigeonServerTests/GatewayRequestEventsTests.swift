import Foundation
@testable import PigeonDelivery
import PigeonCore
import PigeonDomain
@testable import PigeonServer
import Testing
import PigeonTestSupport

/// What a request wakes in the gateway (`GatewayRequestEvents`): no database, no socket.
@Suite("Gateway request events: what a stored send, a queued activity push and a queued report wake", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct GatewayRequestEventsTests {
    /// A clock whose waits last an hour: a wait ends early only when signalled.
    struct IdleClock: DeliveryClock {
        func now() -> Date { Date() }
        func sleep(for duration: Duration) async throws { try await Task.sleep(for: .seconds(3600)) }
    }

    static func events() -> GatewayRequestEvents {
        GatewayRequestEvents(deliveries: QueueWake(urgentPriority: 10), deadlines: DeadlineNotes(), activities: WakeSignal(), reports: WakeSignal())
    }

    /// Whether `signal` was raised: its next wait ends at once (bounded far beyond need).
    static func raised(_ signal: WakeSignal) async -> Bool {
        await BoundedWait.value(within: .seconds(600)) { await signal.wait(upTo: .seconds(3600), clock: IdleClock()) } != nil
    }

    @Test("a stored code wakes the urgent lane and notes its deadline for the expiry watcher")
    func storedCode() async {
        let events = Self.events()
        let expiresAt = Date().addingTimeInterval(60)
        events.notificationStored(PushNotification(id: "code-1", recipients: ["alice"], timeoutSeconds: 60,
                                                   pushContent: PushContent(text: "4711", type: .pinCode), priority: 10), expiresAt: expiresAt)
        #expect(await Self.raised(events.deliveries.urgent))
        #expect(events.deadlines.earliest() == expiresAt)
    }

    @Test("an activity push wakes the activity engine, a report the outbox sender; the deadlines kept are the earliest first")
    func activitiesAndReports() async {
        let events = Self.events()
        events.activityQueued()
        events.reportsQueued()
        #expect(await Self.raised(events.activities))
        #expect(await Self.raised(events.reports))
        let later = Date().addingTimeInterval(600), sooner = Date().addingTimeInterval(30)
        for (id, deadline) in [("blast", later), ("code", sooner)] {
            events.notificationStored(PushNotification(id: id, recipients: ["bob"], timeoutSeconds: 60,
                                                       pushContent: PushContent(text: "t", type: .universal)), expiresAt: deadline)
        }
        #expect(events.deadlines.earliest() == sooner && events.deadlines.count == 2)
    }
}
