import Foundation
import PigeonDomain
import PostgresDriver

/// Wallet passes in PostgreSQL (CONTRACT §7): the bank's versions, Apple's web service
/// (registrations, changed serials, downloads, logs) and, in ``PassStore`` + queue, the update
/// pushes. Authentication tokens are compared as SHA-256 digests computed by the caller.
///
/// Every change that can settle a version — a fetch, an expiry, a failed push — first locks the
/// pass's row, so the check "no device still waits, some did not fetch" sees the others' changes
/// and the bank gets exactly one `reportPassUpdateNotFetched` per version.
package struct PassStore: Sendable {
    let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Bounds on registrations (CONTRACT §7: limits on everything a phone can create).
    package typealias RegistrationLimits = PassRegistrationLimits

    // MARK: The bank's side

    /// What became of an `updatePass`.
    package typealias UpdateResult = PassUpdateResult

    /// Stores `content` as the pass's next version (the first when it is new) and queues an
    /// update push for every device registered for it, in one statement. Last-Modified grows by
    /// at least a second a version, so `If-Modified-Since` never hides a newer version.
    package func update(_ pass: PassIdentity, authenticationDigest: Data, content: Data) async throws -> UpdateResult {
        let parameters = [pass.passTypeIdentifier, pass.serialNumber, PostgresBytea.encode(authenticationDigest), PostgresBytea.encode(content)]
        return try await pool.withConnection { connection in
            let row = try connection.query(sql: """
                WITH stored AS (
                    INSERT INTO passes AS p (pass_type_id, serial_number, auth_token_digest, version, content, modified_at, update_tag)
                    VALUES ($1, $2, $3::bytea, 1, $4::bytea, date_trunc('second', now()), nextval('pass_update_tags'))
                    ON CONFLICT (pass_type_id, serial_number) DO UPDATE
                    SET version = p.version + 1, content = EXCLUDED.content, update_tag = EXCLUDED.update_tag,
                        modified_at = greatest(EXCLUDED.modified_at, p.modified_at + interval '1 second')
                    WHERE p.auth_token_digest = EXCLUDED.auth_token_digest
                    RETURNING p.version
                ), queued AS (
                    UPDATE pass_registrations r
                    SET state = 'QUEUED', version = stored.version, pushes = 0, failures = 0, next_attempt_at = now(),
                        lease_owner = NULL, listed_at = NULL, last_error = NULL, state_changed_at = now()
                    FROM stored
                    WHERE r.pass_type_id = $1 AND r.serial_number = $2
                    RETURNING 1
                )
                SELECT (SELECT version FROM stored) AS version, (SELECT count(*) FROM queued) AS queued
                """, parameters).named.first
            guard let row, let version = try row.decodeIfPresent("version", as: Int64.self) else { return .tokenMismatch }
            return .stored(version: version, queued: try row.decode("queued"))
        }
    }

    /// A pass's current version and every registered device's state, by device library id;
    /// nil for an unknown pass.
    package func status(_ pass: PassIdentity) async throws -> (version: Int64, devices: [(device: String, state: PassDeliveryState)])? {
        try await pool.withConnection(idempotent: true) { connection in
            guard let version = try connection.query(
                "SELECT version FROM passes WHERE pass_type_id = \(pass.passTypeIdentifier) AND serial_number = \(pass.serialNumber)").scalar.flatMap(Int64.init) else { return nil }
            let devices = try connection.query("""
                SELECT device_library_id, state FROM pass_registrations
                WHERE pass_type_id = \(pass.passTypeIdentifier) AND serial_number = \(pass.serialNumber) ORDER BY device_library_id
                """).decoded { row in
                (device: try row.decode("device_library_id", as: String.self), state: try row.decode("state", as: PassDeliveryState.self))
            }
            return (version, devices)
        }
    }

    // MARK: Apple's web service

    /// What became of a registration.
    package typealias RegistrationResult = PassRegistrationResult

    /// Registers `device` (with its current push token) for `pass`.
    package func register(device: String, pushToken: String, for pass: PassIdentity, authenticationDigest: Data,
                         limits: RegistrationLimits) async throws -> RegistrationResult {
        let digest = PostgresBytea.encode(authenticationDigest)
        return try await pool.transaction { connection in
            guard let version = try Self.lockPass(pass, digest: digest, connection) else { return .unauthorized }
            // One device's registrations are counted one at a time.
            _ = try connection.query("SELECT pg_advisory_xact_lock(hashtext('pigeon.pass_device'), hashtext(\(device)))")
            let key = [pass.passTypeIdentifier, pass.serialNumber, device]
            if !(try connection.query(sql: """
                SELECT 1 FROM pass_registrations WHERE pass_type_id = $1 AND serial_number = $2 AND device_library_id = $3
                """, key).isEmpty) {
                _ = try connection.query("UPDATE pass_devices SET push_token = \(pushToken), updated_at = now() WHERE device_library_id = \(device)")
                return .alreadyRegistered
            }
            guard let counts = try connection.query(sql: """
                SELECT (SELECT count(*) FROM pass_registrations WHERE device_library_id = $3) AS of_device,
                       (SELECT count(*) FROM pass_registrations WHERE pass_type_id = $1 AND serial_number = $2) AS of_pass
                """, key).decodedFirst({ row in (device: try row.decode("of_device", as: Int.self), pass: try row.decode("of_pass", as: Int.self)) })
            else { throw PostgresError(.unexpectedResult, "counting a pass's registrations returned no row") }
            if counts.device >= limits.perDevice {
                return .limitReached("this device has registered for \(limits.perDevice) passes, the most one device may")
            }
            if counts.pass >= limits.perPass {
                // The pass's owner on a new phone (or anyone holding a copy of the pass file):
                // the newcomer gets a place, so copies cannot lock the owner out, and a pass
                // never has more than `perPass` devices. The place is taken from the oldest
                // registration of the last day — established ones (a day old or more: the
                // owner's phones) go only when every registration is established — so a copy
                // registered twenty times evicts its own registrations, not the owner's Wallet.
                let evicted = try connection.query("""
                    DELETE FROM pass_registrations WHERE (pass_type_id, serial_number, device_library_id) IN (
                        SELECT pass_type_id, serial_number, device_library_id FROM pass_registrations
                        WHERE pass_type_id = \(pass.passTypeIdentifier) AND serial_number = \(pass.serialNumber)
                        ORDER BY registered_at < now() - interval '1 day', registered_at, device_library_id
                        LIMIT greatest(1, (SELECT count(*) FROM pass_registrations WHERE pass_type_id = \(pass.passTypeIdentifier) AND serial_number = \(pass.serialNumber)) - \(String(limits.perPass)) + 1))
                    RETURNING device_library_id
                    """).decoded { try $0.decode("device_library_id", as: String.self) }
                _ = try connection.query("""
                    DELETE FROM pass_devices d WHERE device_library_id = ANY(\(PostgresArray.encode(evicted))::text[])
                      AND NOT EXISTS (SELECT 1 FROM pass_registrations r WHERE r.device_library_id = d.device_library_id)
                    """)
            }
            _ = try connection.query("""
                INSERT INTO pass_devices (device_library_id, push_token) VALUES (\(device), \(pushToken))
                ON CONFLICT (device_library_id) DO UPDATE SET push_token = EXCLUDED.push_token, updated_at = now()
                """)
            _ = try connection.query(sql: """
                INSERT INTO pass_registrations (pass_type_id, serial_number, device_library_id, version) VALUES ($1, $2, $3, $4)
                """, key + [String(version)])
            return .created
        }
    }

    /// Removes `device`'s registration for `pass` (and the device, when it was its last);
    /// false when the pass or its token is not right. Removing what is not registered is fine.
    package func unregister(device: String, from pass: PassIdentity, authenticationDigest: Data) async throws -> Bool {
        let digest = PostgresBytea.encode(authenticationDigest)
        return try await pool.transaction { connection in
            guard try Self.lockPass(pass, digest: digest, connection) != nil else { return false }
            _ = try connection.query("""
                DELETE FROM pass_registrations WHERE pass_type_id = \(pass.passTypeIdentifier) AND serial_number = \(pass.serialNumber) AND device_library_id = \(device)
                """)
            _ = try connection.query("""
                DELETE FROM pass_devices d WHERE device_library_id = \(device)
                  AND NOT EXISTS (SELECT 1 FROM pass_registrations r WHERE r.device_library_id = d.device_library_id)
                """)
            // The device may have been the last one the version waited for.
            try Self.reportIfSettled(pass, connection)
            return true
        }
    }

    /// The serial numbers of `device`'s passes of `passType` changed after `tag` (all of them
    /// without a tag), plus those whose current version it has not fetched yet — a tag handed
    /// out while another update was still being written never hides that update — and the
    /// newest tag of its passes. Each listed registration is marked: its fetch comes next.
    /// nil when the device has no pass of that type.
    package func serialsUpdated(device: String, passType: String, since tag: Int64?) async throws -> (serials: [String], lastUpdated: Int64)? {
        try await pool.withConnection { connection in
            let row = try connection.query("""
                WITH mine AS (
                    SELECT r.serial_number, p.update_tag, r.state
                    FROM pass_registrations r JOIN passes p USING (pass_type_id, serial_number)
                    WHERE r.device_library_id = \(device) AND r.pass_type_id = \(passType)
                ), listed AS (
                    UPDATE pass_registrations r SET listed_at = clock_timestamp()
                    FROM mine
                    WHERE r.device_library_id = \(device) AND r.pass_type_id = \(passType) AND r.serial_number = mine.serial_number
                      AND (\(tag.map(String.init))::bigint IS NULL OR mine.update_tag > \(tag.map(String.init))::bigint
                           OR mine.state IN ('QUEUED', 'SENT', 'EXPIRED', 'SENDING_FAILED'))
                    RETURNING r.serial_number
                )
                SELECT (SELECT max(update_tag) FROM mine) AS last_updated,
                       (SELECT array_agg(serial_number ORDER BY serial_number) FROM listed) AS serials
                """).named.first
            guard let row, let lastUpdated = try row.decodeIfPresent("last_updated", as: Int64.self) else { return nil }
            let serials = try row.decodeIfPresent("serials", as: String.self).map { PostgresArray.decode($0).compactMap { $0 } } ?? []
            return (serials, lastUpdated)
        }
    }

    /// What a download of a pass came to.
    package typealias FetchResult = PassFetchResult

    /// The latest version of `pass`, or 304 for a device that has it. Either way one device that
    /// waited for this version is `FETCHED`: Apple's download request names no device, so it is
    /// the one that asked first for the changed serials and has not fetched, else the one
    /// waiting longest (a Wallet refreshed by hand), else a device that registered without
    /// fetching.
    package func fetch(_ pass: PassIdentity, authenticationDigest: Data, ifModifiedSince: Date?) async throws -> FetchResult {
        let digest = PostgresBytea.encode(authenticationDigest)
        let since = ifModifiedSince.map { String($0.timeIntervalSince1970) }
        return try await pool.transaction { connection in
            // The content only when it is to be sent (not for a 304).
            guard let row = try connection.query("""
                SELECT version, extract(epoch FROM modified_at)::double precision AS modified_at,
                       CASE WHEN \(since)::double precision IS NULL OR modified_at > to_timestamp(\(since)::double precision) THEN content END AS content
                FROM passes
                WHERE pass_type_id = \(pass.passTypeIdentifier) AND serial_number = \(pass.serialNumber) AND auth_token_digest = \(digest)::bytea FOR UPDATE
                """).named.first
            else { return .unauthorized }
            let version: Int64 = try row.decode("version")
            let modifiedAt: Date = try row.decode("modified_at")
            // Read after the lock: a concurrent download of the same pass is attributed first.
            let before = try connection.query("""
                UPDATE pass_registrations r
                SET state = 'FETCHED', next_attempt_at = NULL, lease_owner = NULL, last_error = NULL, state_changed_at = now()
                FROM (SELECT device_library_id, state FROM pass_registrations
                      WHERE pass_type_id = \(pass.passTypeIdentifier) AND serial_number = \(pass.serialNumber) AND version = \(String(version))
                        AND state IN ('QUEUED', 'SENT', 'EXPIRED', 'SENDING_FAILED', 'REGISTERED')
                      ORDER BY listed_at IS NULL, state = 'REGISTERED', listed_at, state_changed_at
                      LIMIT 1) AS fetcher
                WHERE r.pass_type_id = \(pass.passTypeIdentifier) AND r.serial_number = \(pass.serialNumber) AND r.device_library_id = fetcher.device_library_id
                RETURNING fetcher.state
                """).scalar
            // Only a device that was still waiting can be the last one its version waited for.
            if before == PassDeliveryState.queued.rawValue || before == PassDeliveryState.sent.rawValue {
                try Self.reportIfSettled(pass, connection)
            }
            guard let text = try row.decodeIfPresent("content", as: String.self) else { return .notModified(modifiedAt: modifiedAt) }
            guard let content = PostgresBytea.decode(text) else { throw PostgresError(.unexpectedResult, "column content is not bytea") }
            return .pass(content: content, modifiedAt: modifiedAt, version: version)
        }
    }

    // MARK: Shared steps

    /// Locks the pass's row when `digest` is its token's; returns its version, or nil.
    static func lockPass(_ pass: PassIdentity, digest: String, _ connection: PostgresConnection) throws -> Int64? {
        try connection.query("""
            SELECT version FROM passes WHERE pass_type_id = \(pass.passTypeIdentifier) AND serial_number = \(pass.serialNumber) AND auth_token_digest = \(digest)::bytea FOR UPDATE
            """).scalar.flatMap(Int64.init)
    }

    /// Writes the bank's report for the pass's current version when no device still waits for
    /// it and some did not fetch it, once a version. The caller holds the pass's row lock.
    static func reportIfSettled(_ pass: PassIdentity, _ connection: PostgresConnection) throws {
        _ = try connection.query("""
            WITH counts AS (
                SELECT p.version,
                       count(*) FILTER (WHERE r.state IN ('QUEUED', 'SENT')) AS waiting,
                       count(*) FILTER (WHERE r.state IN ('EXPIRED', 'SENDING_FAILED')) AS missed
                FROM passes p
                JOIN pass_registrations r ON r.pass_type_id = p.pass_type_id AND r.serial_number = p.serial_number
                                         AND r.version = p.version
                WHERE p.pass_type_id = \(pass.passTypeIdentifier) AND p.serial_number = \(pass.serialNumber) AND p.reported_version < p.version
                GROUP BY p.version
            ), marked AS (
                UPDATE passes p SET reported_version = counts.version
                FROM counts
                WHERE p.pass_type_id = \(pass.passTypeIdentifier) AND p.serial_number = \(pass.serialNumber) AND counts.waiting = 0 AND counts.missed > 0
                RETURNING counts.missed
            )
            INSERT INTO outbox (kind, payload)
            SELECT 'reportPassUpdateNotFetched',
                   jsonb_build_object('passTypeIdentifier', \(pass.passTypeIdentifier)::text, 'serialNumber', \(pass.serialNumber)::text, 'deviceCount', missed)
            FROM marked
            """)
    }
}
