import Foundation
import PigeonHTTP
import PigeonDomain
import Synchronization

/// The device API's limits (CONTRACT §2): register and verify calls per client address (this
/// process's memory: the first line, before the database is asked anything), registrations that
/// reach the bank per user, and verification attempts per (bank client, user, device) reserved in
/// the database before the bank is called, so concurrent guesses and several gateway processes
/// share one count.
package final class DeviceRateLimits: Sendable {
    /// The limits, as `server.conf` sets them (`registrationsPerAddressPerMinute`, …).
    package struct Settings: Sendable {
        package var registrationsPerAddressPerMinute: Int
        package var registrationsPerUserPerHour: Int
        package var verificationAttempts: Int
        package var verificationWindowMinutes: Int

        package init(registrationsPerAddressPerMinute: Int, registrationsPerUserPerHour: Int, verificationAttempts: Int, verificationWindowMinutes: Int) {
            self.registrationsPerAddressPerMinute = registrationsPerAddressPerMinute
            self.registrationsPerUserPerHour = registrationsPerUserPerHour
            self.verificationAttempts = verificationAttempts
            self.verificationWindowMinutes = verificationWindowMinutes
        }
    }

    package let settings: Settings
    private let addresses: AddressRateLimit

    package init(_ settings: Settings, clock: @escaping @Sendable () -> Double = AddressRateLimit.uptime) {
        self.settings = settings
        addresses = AddressRateLimit(perMinute: settings.registrationsPerAddressPerMinute, clock: clock)
    }

    /// Counts a register or verify call from `address`; throws 429 beyond the limit.
    package func admitAddress(_ address: String) throws(APIError) {
        if let retryAfter = addresses.take(address) {
            throw .rateLimited(retryAfter: retryAfter, "too many registrations from this address; try again later")
        }
    }

    /// Counts a registration of `user` that will reach the bank; throws 429 beyond the limit.
    package func admitRegistration(bankClientId: String, userKey: String, store: any RateLimitCounting) async throws -> Void {
        guard settings.registrationsPerUserPerHour > 0 else { return }
        let decision = try await store.take(bucket: "register:\(bankClientId)\u{1F}\(userKey)", limit: settings.registrationsPerUserPerHour, window: .seconds(3600))
        guard decision.allowed else {
            throw APIError.rateLimited(retryAfter: decision.retryAfterSeconds, "too many registrations for this user; try again later")
        }
    }

    /// Reserves one verification attempt of this device before the bank sees the code; throws
    /// 429 once `verificationAttempts` were used within the window. Returns whether this was the
    /// last attempt allowed.
    package func reserveVerification(bankClientId: String, userKey: String, deviceId: String, store: any RateLimitCounting) async throws -> Bool {
        let decision = try await store.take(
            bucket: "verify:\(bankClientId)\u{1F}\(userKey)\u{1F}\(deviceId)", limit: settings.verificationAttempts,
            window: .seconds(60 * settings.verificationWindowMinutes))
        guard decision.allowed else {
            throw APIError.rateLimited(retryAfter: decision.retryAfterSeconds, "too many verification attempts for this device; register again later")
        }
        return decision.count == settings.verificationAttempts
    }
}
