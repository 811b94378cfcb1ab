import Foundation

/// A registered device's update push (or its fetch wait that ended) held by a pass engine.
package struct ClaimedPassPush: Sendable, Equatable {
    package var pass: PassIdentity
    package var deviceLibraryIdentifier: String
    package var pushToken: String
    /// `QUEUED` (a push is due) or `SENT` (the wait for its fetch ended).
    package var state: PassDeliveryState
    /// The pass version the state is about; an outcome for an older version changes nothing.
    package var version: Int64
    /// Update pushes APNs accepted for this version so far.
    package var pushes: Int
    /// Attempts in a row APNs did not take.
    package var failures: Int

    package init(pass: PassIdentity, deviceLibraryIdentifier: String, pushToken: String, state: PassDeliveryState,
                version: Int64, pushes: Int, failures: Int) {
        self.pass = pass
        self.deviceLibraryIdentifier = deviceLibraryIdentifier
        self.pushToken = pushToken
        self.state = state
        self.version = version
        self.pushes = pushes
        self.failures = failures
    }
}

/// What a pass engine writes for one claim.
package struct PassPushResult: Sendable, Equatable {
    package enum Change: Sendable, Equatable {
        /// APNs accepted the push: `SENT`, one more push, the fetch awaited until `fetchDeadline`.
        case sent(fetchDeadline: Date)
        /// APNs did not take it this time: the state stays, due again at `at`.
        case retry(at: Date, error: String)
        /// Every push was made and no fetch came: `EXPIRED`.
        case expired
        /// APNs refused the push for good (topic, certificate) or would not take it for too long.
        case failed(error: String)
        /// The device's push token is dead: the device and its registrations are removed.
        case tokenDead(error: String)
    }

    package var claim: ClaimedPassPush
    package var change: Change

    package init(claim: ClaimedPassPush, change: Change) {
        self.claim = claim
        self.change = change
    }
}
