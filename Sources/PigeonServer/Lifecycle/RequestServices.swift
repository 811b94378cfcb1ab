import BankProxy
import PigeonBankService
import PigeonConsole
import PigeonDeviceAPI
import PigeonWallet
import PigeonDomain
import PigeonStore
import PostgresDriver

// The request side's seams met by PostgreSQL's stores and the bank proxy's client: the
// endpoints are written against protocols and tested with fakes, as the engine is
// (``DeliveryServices``).

extension DeviceRegistry: DeviceRegistering {}
extension AcknowledgementStore: AcknowledgementRecording {}
extension RateLimitStore: RateLimitCounting {}
extension ActivityStore: ActivityTokenRecording {}
extension BankProxyClient: SubscriptionAuthorizing {}
extension NotificationStore: NotificationRecording {}
extension SubscriptionStore: SubscriptionKeeping {}
extension PassStore: PassKeeping {}
extension ActivityStore: ActivityKeeping {}
extension PassStore: WalletRegistering {}
extension PostgresConsoleSessions: ConsoleSessionStore {}
extension PostgresAuditTrail: AuditTrail {}

extension RequestStores {
    /// The gateway's seams: the bank's calls on `main`, the phones' on `devices` (a pool of their
    /// own when the bank has its own listener, so a flood of acknowledgements never stands in
    /// front of a sendNotification).
    /// `notifications` is the send batcher's store, shared with the console; `reachPrecision`
    /// how closely an acknowledging device's last reach is kept (``ReachPrecision``).
    static func postgres(main: PostgresPool, devices: PostgresPool, identifiers: UserIdentifiers, reachPrecision: Duration,
                         notifications: NotificationStore,
                         bank: BankProxyClient?, channels: (any BroadcastChannels)?, console: ConsoleStores?) -> RequestStores {
        RequestStores(
            notifications: notifications,
            subscriptions: SubscriptionStore(pool: main, identifiers: identifiers),
            passes: PassStore(pool: main),
            activities: ActivityStore(pool: main, identifiers: identifiers),
            channels: channels,
            registry: DeviceRegistry(pool: devices, identifiers: identifiers),
            acknowledgements: AcknowledgementStore(pool: devices, identifiers: identifiers, reachPrecision: reachPrecision),
            rateLimits: RateLimitStore(pool: devices),
            activityTokens: ActivityStore(pool: devices, identifiers: identifiers),
            bank: bank,
            wallet: PassStore(pool: devices),
            console: console)
    }
}
