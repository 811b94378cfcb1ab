import Foundation
import PigeonDomain
import PostgresDriver

/// The device API's view of subscriptions: registration (known devices, pending SMS
/// verification, subscribing with `overrideSubscriptions`) and bearer-token authentication.
/// User ids are compared under the configured ``UserIdentifiers`` rule (folded in Swift, as
/// everywhere else, never by the database's locale); device ids exactly.
package struct DeviceRegistry: Sendable {
    private let pool: PostgresPool
    private let identifiers: UserIdentifiers

    package init(pool: PostgresPool, identifiers: UserIdentifiers) {
        self.pool = pool
        self.identifiers = identifiers
    }


    /// A known device refreshing its push token, proved by its current authentication token:
    /// new push token, new authentication token (the old one stops working).
    /// `encryptionKey`: kept, removed or replaced with the refresh.
    package func refresh(device id: Int64, pushToken: String, environment: PushEnvironment = .production, token: StoredToken,
                        encryptionKey: EncryptionKeyUpdate = .keep) async throws {
        // The key's columns: kept (not written), removed, or replaced.
        let (changesKey, newKey): (Bool, DeviceEncryptionKey?) = switch encryptionKey {
        case .keep: (false, nil)
        case .remove: (true, nil)
        case .replace(let key): (true, key)
        }
        let query: PostgresQuery = """
            UPDATE devices SET push_token = \(pushToken), auth_token_hash = \(token.digest)::bytea,
                               auth_token_expires_at = to_timestamp(\(token.expiresAt.timeIntervalSince1970)::double precision),
                               environment = \(environment.rawValue), updated_at = now(),
                               encryption_key_id = CASE WHEN \(changesKey) THEN \(newKey?.keyId) ELSE encryption_key_id END,
                               encryption_public_key = CASE WHEN \(changesKey) THEN \(newKey?.publicKey)::bytea ELSE encryption_public_key END
            WHERE id = \(id)
            """
        _ = try await pool.withConnection { connection in try connection.query(query) }
    }

    /// Subscribes a device the bank authorized; with `override`, the user's other devices are
    /// unsubscribed in the same transaction. Every registration of this device still waiting for
    /// a code is dropped. Returns the device's row id.
    @discardableResult
    package func subscribe(_ identity: DeviceIdentity, pushToken: String, token: StoredToken, override: Bool,
                          encryptionKey: DeviceEncryptionKey? = nil) async throws -> Int64 {
        let column = identifiers.userColumnSQL
        let key = identifiers.comparable(identity.userId)
        return try await pool.transaction { connection in
            // Registrations of one device at the same moment take turns (else both delete
            // nothing and the second insert breaks the device's unique key): the last one wins.
            let lock = "device\u{1F}\(key)\u{1F}\(identity.deviceId)\u{1F}\(identity.platform.rawValue)\u{1F}\(identity.appId)"
            _ = try connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(lock), 0))")
            // Any earlier row of this device (under another id spelling too) is replaced.
            _ = try connection.query("""
                DELETE FROM devices WHERE \(sql: column) = \(key) AND device_id = \(identity.deviceId)
                  AND platform = \(identity.platform.rawValue) AND app_id = \(identity.appId)
                """)
            _ = try connection.query("""
                DELETE FROM pending_registrations WHERE \(sql: column) = \(key) AND device_id = \(identity.deviceId)
                  AND platform = \(identity.platform.rawValue) AND app_id = \(identity.appId)
                """)
            let id = try Self.insert(identity, pushToken: pushToken, token: token, encryptionKey: encryptionKey, connection)
            if override {
                _ = try connection.query(sql: """
                    WITH gone AS (DELETE FROM devices WHERE \(identifiers.userColumn) = $1 AND id <> $2 RETURNING *), \(RemovedDevices.noted(reason: "$3"))
                    SELECT count(*) FROM gone
                    """, [key, String(id), RemovedDevices.replaced])
            }
            return id
        }
    }

    /// Keeps a registration waiting for its SMS code under the digest of its registration id.
    /// Earlier waiting registrations of the device stay (each verifies only its own push token);
    /// beyond the newest `keep` of them the oldest are dropped.
    package func savePending(_ identity: DeviceIdentity, pushToken: String, registrationDigest: Data, keep: Int = 5,
                            encryptionKey: DeviceEncryptionKey? = nil) async throws {
        let column = identifiers.userColumnSQL
        let key = identifiers.comparable(identity.userId)
        _ = try await pool.transaction { connection in
            _ = try connection.query("""
                INSERT INTO pending_registrations (registration_digest, bank_client_id, user_id, user_folded, device_id, platform,
                                                   push_token, app_id, environment, encryption_key_id, encryption_public_key)
                VALUES (\(registrationDigest)::bytea, \(identity.bankClientId), \(identity.userId), \(identity.userId.lowercased()),
                        \(identity.deviceId), \(identity.platform.rawValue), \(pushToken), \(identity.appId), \(identity.environment.rawValue),
                        \(encryptionKey?.keyId), \(encryptionKey?.publicKey)::bytea)
                """)
            _ = try connection.query("""
                DELETE FROM pending_registrations WHERE id IN (
                    SELECT id FROM pending_registrations WHERE \(sql: column) = \(key) AND device_id = \(identity.deviceId)
                    ORDER BY id DESC OFFSET \(literal: max(1, keep)))
                """)
        }
    }

    /// The registration with this id's digest, if it is waiting and belongs to this bank
    /// client, user and device.
    package func pending(registrationDigest: Data, bankClientId: String, userId: String, deviceId: String) async throws -> PendingRegistration? {
        let query: PostgresQuery = """
            SELECT platform, push_token, bank_client_id, user_id, device_id, app_id, environment,
                   encryption_key_id, encryption_public_key FROM pending_registrations
            WHERE registration_digest = \(registrationDigest)::bytea AND \(sql: identifiers.userColumnSQL) = \(identifiers.comparable(userId))
              AND device_id = \(deviceId) AND bank_client_id = \(bankClientId) AND created_at > now() - interval '1 day'
            """
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query(query).decodedFirst { row in
                PendingRegistration(
                    identity: DeviceIdentity(bankClientId: try row.decode("bank_client_id"), userId: try row.decode("user_id"),
                                             deviceId: try row.decode("device_id"), platform: try row.decode("platform"),
                                             appId: try row.decodeIfPresent("app_id") ?? PushRoute.defaultApp,
                                             environment: try row.decodeIfPresent("environment") ?? .production),
                    pushToken: try row.decode("push_token"),
                    encryptionKey: try Self.encryptionKey(id: row.decodeIfPresent("encryption_key_id"), point: row.decodeIfPresent("encryption_public_key")))
            }
        }
    }

    /// Drops every registration of this device waiting for a code (its attempts are used up).
    package func dropPending(bankClientId: String, userId: String, deviceId: String) async throws {
        let query: PostgresQuery = """
            DELETE FROM pending_registrations
            WHERE \(sql: identifiers.userColumnSQL) = \(identifiers.comparable(userId)) AND device_id = \(deviceId) AND bank_client_id = \(bankClientId)
            """
        _ = try await pool.withConnection { connection in try connection.query(query) }
    }

    /// The subscribed device holding this token, if the token is known and not expired.
    package func authenticate(digest: Data) async throws -> AuthenticatedDevice? {
        try await pool.withConnection(idempotent: true) { connection in
            guard let row = try connection.query("""
                SELECT id, user_id, device_id, platform, bank_client_id, app_id, environment FROM devices
                WHERE auth_token_hash = \(digest)::bytea AND auth_token_expires_at > now() AND state = 'SUBSCRIBED'
                """).named.first else { return nil }
            let user: String = try row.decode("user_id")
            return AuthenticatedDevice(id: try row.decode("id"), userId: user, identity: DeviceIdentity(
                bankClientId: try row.decode("bank_client_id"), userId: user, deviceId: try row.decode("device_id"),
                platform: try row.decode("platform"), appId: try row.decodeIfPresent("app_id") ?? PushRoute.defaultApp,
                environment: try row.decodeIfPresent("environment") ?? .production))
        }
    }

    /// A device key from its two columns (both set, or none).
    static func encryptionKey(id: String?, point: String?) -> DeviceEncryptionKey? {
        guard let id, let point = point.flatMap(PostgresBytea.decode) else { return nil }
        return DeviceEncryptionKey(keyId: id, publicKey: point)
    }

    private static func insert(_ identity: DeviceIdentity, pushToken: String, token: StoredToken, encryptionKey: DeviceEncryptionKey?,
                               _ connection: PostgresConnection) throws -> Int64 {
        guard let id = try connection.query("""
            INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, state,
                                 auth_token_hash, auth_token_expires_at, app_id, environment, encryption_key_id, encryption_public_key)
            VALUES (\(identity.bankClientId), \(identity.userId), \(identity.userId.lowercased()), \(identity.deviceId),
                    \(identity.platform.rawValue), \(pushToken), 'SUBSCRIBED', \(token.digest)::bytea,
                    to_timestamp(\(token.expiresAt.timeIntervalSince1970)::double precision), \(identity.appId), \(identity.environment.rawValue),
                    \(encryptionKey?.keyId), \(encryptionKey?.publicKey)::bytea)
            RETURNING id
            """).scalar.flatMap(Int64.init) else {
            throw PostgresError(.unexpectedResult, "registering a device returned no id")
        }
        return id
    }
}
