import Foundation

// What the bank's `updatePass` and Apple's PassKit web service come to: the Wallet seams'
// vocabulary, apart from any store.

/// Bounds on registrations (CONTRACT §7: limits on everything a phone can create).
package struct PassRegistrationLimits: Sendable, Equatable {
    /// Passes one Wallet may register for.
    package var perDevice: Int
    /// Wallets one pass may be registered on.
    package var perPass: Int

    package init(perDevice: Int = 500, perPass: Int = 20) {
        self.perDevice = perDevice
        self.perPass = perPass
    }
}

/// What became of an `updatePass`.
package enum PassUpdateResult: Sendable, Equatable {
    /// Stored as `version`; `queued` devices will be pushed.
    case stored(version: Int64, queued: Int)
    /// The pass exists with another authentication token, which Wallet never changes.
    case tokenMismatch
}

/// What became of a registration.
package enum PassRegistrationResult: Sendable, Equatable {
    case created
    case alreadyRegistered
    /// No such pass, or not its authentication token.
    case unauthorized
    /// The device's `RegistrationLimits.perDevice` reached. (A pass at its `perPass` gives up
    /// its oldest registration of the last day for the new one instead, or its oldest when
    /// all are older.)
    case limitReached(String)
}

/// What a download of a pass came to.
package enum PassFetchResult: Sendable, Equatable {
    case unauthorized
    /// The device has this version already (`If-Modified-Since` at or after Last-Modified).
    case notModified(modifiedAt: Date)
    case pass(content: Data, modifiedAt: Date, version: Int64)
}
