import PigeonBankService
import PigeonConsole
import PigeonDeviceAPI
import PigeonStore
import PigeonWallet

/// The request side's seams, one value for each: PostgreSQL's stores and the bank proxy's client
/// in the gateway (``RequestStores/postgres(main:devices:identifiers:reachPrecision:notifications:bank:channels:console:)``),
/// in-memory fakes in the request-side tests. ``RequestSide`` builds the endpoints from them.
struct RequestStores: Sendable {
    /// The bank's SOAP service: sends, subscriptions, passes, Live Activities and channels.
    var notifications: any NotificationRecording
    var subscriptions: any SubscriptionKeeping
    var passes: any PassKeeping
    /// `nil`: the Live Activity and widget operations answer a fault.
    var activities: (any ActivityKeeping)?
    /// `nil`: no APNs, so no broadcast channels.
    var channels: (any BroadcastChannels)?

    /// The device API: registrations, acknowledgements, its rate limits and activity tokens.
    var registry: any DeviceRegistering
    var acknowledgements: any AcknowledgementRecording
    var rateLimits: any RateLimitCounting
    var activityTokens: (any ActivityTokenRecording)?
    /// The bank's answer about a new device; `nil` without `sbiOutboundWebServiceURL`.
    var bank: (any SubscriptionAuthorizing)?

    /// The PassKit web service.
    var wallet: any WalletRegistering

    /// The console's sessions, audit trail and data; `nil`: no console.
    var console: ConsoleStores?

    /// What the operator console reads and writes.
    struct ConsoleStores: Sendable {
        var sessions: any ConsoleSessionStore
        var audit: any AuditTrail
        var data: any ConsoleSource
    }
}
