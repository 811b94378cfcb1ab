import PigeonConfiguration
import PigeonDomain

extension GatewayConfiguration {
    /// How closely the stores keep a device's last reach: ``ReachPrecision`` of the hygiene
    /// period (`deviceExpiredPeriodMillis`), whose sweep waits that much longer.
    var reachPrecision: Duration {
        ReachPrecision.forExpiry(.milliseconds(deviceExpiredPeriodMillis))
    }
}
