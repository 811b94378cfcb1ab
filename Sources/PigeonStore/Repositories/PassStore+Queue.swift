import Foundation
import PigeonCore
import PigeonDomain
import PostgresDriver

/// The pass engine's queue: registrations whose push is due or whose fetch wait ended, claimed
/// with `FOR UPDATE SKIP LOCKED` under a lease like deliveries, their results written only by
/// the lease holder, only onto the version and state it claimed (a fetch in between wins).
extension PassStore {
    /// Up to `limit` due claims, oldest due first, leased to `owner` for `lease`.
    package func claimPassPushes(owner: String, limit: Int, lease: Duration) async throws -> [ClaimedPassPush] {
        let leaseSeconds = String(lease.inSeconds)
        let limit = max(1, min(limit, 10_000))
        // In a transaction: a row that does not decode fails the claim and rolls its leases back
        // (loudly), instead of vanishing from the claim while it stays leased.
        return try await pool.transaction { connection in
            try connection.query(sql: """
                WITH due AS (
                    SELECT pass_type_id, serial_number, device_library_id FROM pass_registrations
                    WHERE state IN ('QUEUED', 'SENT') AND next_attempt_at <= now()
                    ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
                )
                UPDATE pass_registrations r
                SET lease_owner = $1, next_attempt_at = now() + make_interval(secs => $2::double precision)
                FROM due, pass_devices d
                WHERE r.pass_type_id = due.pass_type_id AND r.serial_number = due.serial_number
                  AND r.device_library_id = due.device_library_id AND d.device_library_id = r.device_library_id
                RETURNING r.pass_type_id, r.serial_number, r.device_library_id, d.push_token, r.state, r.version, r.pushes, r.failures
                """, [owner, leaseSeconds]).decoded { row in
                ClaimedPassPush(pass: PassIdentity(passTypeIdentifier: try row.decode("pass_type_id"), serialNumber: try row.decode("serial_number")),
                                deviceLibraryIdentifier: try row.decode("device_library_id"), pushToken: try row.decode("push_token"),
                                state: try row.decode("state"), version: try row.decode("version"),
                                pushes: try row.decode("pushes"), failures: try row.decode("failures"))
            }
        }
    }

    /// Writes the results `owner` still holds, in one transaction: the passes that may settle
    /// are locked first (in key order, so two writers never deadlock), then each change is
    /// applied, then each such pass's report is written if its version settled.
    @discardableResult
    package func recordPassPushes(_ results: [PassPushResult], owner: String) async throws -> Int {
        guard !results.isEmpty else { return 0 }
        var sentRows: [[String?]] = [[], [], [], [], []]
        var retriedRows: [[String?]] = [[], [], [], [], [], []]
        var expiredRows: [[String?]] = [[], [], [], []]
        var failedRows: [[String?]] = [[], [], [], [], []]
        var deadRows: [[String?]] = [[], []]
        var settling = Set<PassIdentity>()
        for result in results {
            let claim = result.claim
            let key: [String?] = [claim.pass.passTypeIdentifier, claim.pass.serialNumber, claim.deviceLibraryIdentifier, String(claim.version)]
            func add(_ columns: inout [[String?]], _ extra: [String?]) {
                for (index, value) in (key + extra).enumerated() { columns[index].append(value) }
            }
            switch result.change {
            case .sent(let deadline): add(&sentRows, [String(deadline.timeIntervalSince1970)])
            case .retry(let at, let error): add(&retriedRows, [String(at.timeIntervalSince1970), String(error.prefix(500))])
            case .expired:
                add(&expiredRows, [])
                settling.insert(claim.pass)
            case .failed(let error):
                add(&failedRows, [String(error.prefix(500))])
                settling.insert(claim.pass)
            case .tokenDead:
                deadRows[0].append(claim.deviceLibraryIdentifier)
                deadRows[1].append(claim.pushToken)
                settling.insert(claim.pass)
            }
        }
        let (sent, retried, expired, failed, dead) = (sentRows.map(PostgresArray.encode), retriedRows.map(PostgresArray.encode),
                                                      expiredRows.map(PostgresArray.encode), failedRows.map(PostgresArray.encode),
                                                      deadRows.map(PostgresArray.encode))
        let locked = settling.sorted { ($0.passTypeIdentifier, $0.serialNumber) < ($1.passTypeIdentifier, $1.serialNumber) }
        return try await pool.transaction { connection in
            for pass in locked {
                _ = try connection.query("SELECT 1 FROM passes WHERE pass_type_id = \(pass.passTypeIdentifier) AND serial_number = \(pass.serialNumber) FOR UPDATE")
            }
            let match = """
                r.pass_type_id = u.pass_type_id AND r.serial_number = u.serial_number AND r.device_library_id = u.device_library_id
                  AND r.version = u.version AND r.lease_owner = $1
                """
            var changed = 0
            if sent[0] != "{}" {
                changed += try connection.query(sql: """
                    UPDATE pass_registrations r
                    SET state = 'SENT', pushes = r.pushes + 1, failures = 0, next_attempt_at = to_timestamp(u.deadline),
                        lease_owner = NULL, last_error = NULL, state_changed_at = now()
                    FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::double precision[])
                         AS u(pass_type_id, serial_number, device_library_id, version, deadline)
                    WHERE \(match) AND r.state IN ('QUEUED', 'SENT')
                    """, [owner] + sent).affected
            }
            if retried[0] != "{}" {
                changed += try connection.query(sql: """
                    UPDATE pass_registrations r
                    SET failures = r.failures + 1, next_attempt_at = to_timestamp(u.retry_at), lease_owner = NULL, last_error = u.error
                    FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::double precision[], $7::text[])
                         AS u(pass_type_id, serial_number, device_library_id, version, retry_at, error)
                    WHERE \(match) AND r.state IN ('QUEUED', 'SENT')
                    """, [owner] + retried).affected
            }
            if expired[0] != "{}" {
                changed += try connection.query(sql: """
                    UPDATE pass_registrations r
                    SET state = 'EXPIRED', next_attempt_at = NULL, lease_owner = NULL, state_changed_at = now()
                    FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS u(pass_type_id, serial_number, device_library_id, version)
                    WHERE \(match) AND r.state = 'SENT'
                    """, [owner] + expired).affected
            }
            if failed[0] != "{}" {
                changed += try connection.query(sql: """
                    UPDATE pass_registrations r
                    SET state = 'SENDING_FAILED', next_attempt_at = NULL, lease_owner = NULL, last_error = u.error, state_changed_at = now()
                    FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[])
                         AS u(pass_type_id, serial_number, device_library_id, version, error)
                    WHERE \(match) AND r.state IN ('QUEUED', 'SENT')
                    """, [owner] + failed).affected
            }
            if dead[0] != "{}" {
                // Only while the device still has the token that was refused: a Wallet that
                // registered again since has a new one.
                changed += try connection.query(sql: """
                    DELETE FROM pass_devices d USING unnest($1::text[], $2::text[]) AS u(device_library_id, push_token)
                    WHERE d.device_library_id = u.device_library_id AND d.push_token = u.push_token
                    """, dead).affected
            }
            for pass in locked { try Self.reportIfSettled(pass, connection) }
            return changed
        }
    }

    /// Hands back every claim `owner` holds, due at once.
    @discardableResult
    package func releasePassPushes(owner: String) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query("""
                UPDATE pass_registrations SET lease_owner = NULL, next_attempt_at = now()
                WHERE lease_owner = \(owner) AND state IN ('QUEUED', 'SENT')
                """).affected
        }
    }
}
