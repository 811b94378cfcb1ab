import BankProxy
import PigeonBankService
import PigeonDeviceAPI
import PigeonWallet
import PigeonStore

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
