import Foundation
import PigeonCore

/// A device's identity as the app states it when registering.
public struct DeviceIdentity: Sendable, Equatable {
    public var bankClientId: String
    public var userId: String
    public var deviceId: String
    public var platform: Platform

    public init(bankClientId: String, userId: String, deviceId: String, platform: Platform) {
        self.bankClientId = bankClientId
        self.userId = userId
        self.deviceId = deviceId
        self.platform = platform
    }
}

/// A device an authentication token belongs to.
public struct AuthenticatedDevice: Sendable, Equatable {
    public var id: Int64
    public var userId: String
}

/// An authentication token as stored: its SHA-256 digest and when it stops working.
public struct StoredToken: Sendable {
    public var digest: Data
    public var expiresAt: Date

    public init(digest: Data, expiresAt: Date) {
        self.digest = digest
        self.expiresAt = expiresAt
    }

    fileprivate var digestParameter: String { Self.byteaParameter(digest) }
    fileprivate var expiresParameter: String { String(expiresAt.timeIntervalSince1970) }

    /// A digest as a `bytea` parameter in text form.
    fileprivate static func byteaParameter(_ digest: Data) -> String {
        "\\x" + digest.map { String(format: "%02x", $0) }.joined()
    }
}

/// The device API's view of subscriptions: registration (known devices, pending SMS
/// verification, subscribing with `overrideSubscriptions`) and bearer-token authentication.
/// User ids are compared under the configured ``UserIdentifiers`` rule (folded in Swift, as
/// everywhere else, never by the database's locale); device ids exactly.
public struct DeviceRegistry: Sendable {
    private let pool: PostgresPool
    private let identifiers: UserIdentifiers

    public init(pool: PostgresPool, identifiers: UserIdentifiers) {
        self.pool = pool
        self.identifiers = identifiers
    }


    /// The subscribed device with this user, device id and platform, if any.
    public func subscribedDevice(_ identity: DeviceIdentity) async throws -> Int64? {
        let sql = """
            SELECT id FROM devices
            WHERE \(identifiers.userColumn) = $1 AND device_id = $2 AND platform = $3 AND state = 'SUBSCRIBED'
            ORDER BY id LIMIT 1
            """
        return try await pool.withConnection { [userKey = identifiers.comparable(identity.userId)] connection in
            try connection.query(sql, [userKey, identity.deviceId, identity.platform.rawValue]).scalar.flatMap(Int64.init)
        }
    }

    /// A known device re-registering: new push token, new authentication token.
    public func refresh(device id: Int64, pushToken: String, token: StoredToken) async throws {
        _ = try await pool.withConnection { connection in
            try connection.query("""
                UPDATE devices SET push_token = $2, auth_token_hash = $3::bytea, auth_token_expires_at = to_timestamp($4),
                                   updated_at = now()
                WHERE id = $1
                """, [String(id), pushToken, token.digestParameter, token.expiresParameter])
        }
    }

    /// Subscribes a device the bank authorized; with `override`, the user's other devices are
    /// unsubscribed in the same transaction. Returns the device's row id.
    @discardableResult
    public func subscribe(_ identity: DeviceIdentity, pushToken: String, token: StoredToken, override: Bool) async throws -> Int64 {
        let column = identifiers.userColumn
        let key = identifiers.comparable(identity.userId)
        return try await pool.transaction { connection in
            // Any earlier row of this device (a pending one, or one under another id spelling) is replaced.
            _ = try connection.query("DELETE FROM devices WHERE \(column) = $1 AND device_id = $2 AND platform = $3",
                                     [key, identity.deviceId, identity.platform.rawValue])
            let id = try Self.insert(identity, pushToken: pushToken, state: "SUBSCRIBED", token: token, connection)
            if override {
                _ = try connection.query("DELETE FROM devices WHERE \(column) = $1 AND id <> $2", [key, String(id)])
            }
            return id
        }
    }

    /// Keeps a registration waiting for the SMS code (replacing an earlier wait of this device).
    public func savePending(_ identity: DeviceIdentity, pushToken: String) async throws {
        let sql = "DELETE FROM devices WHERE \(identifiers.userColumn) = $1 AND device_id = $2 AND platform = $3 AND state = 'PENDING_VERIFICATION'"
        _ = try await pool.transaction { [key = identifiers.comparable(identity.userId)] connection in
            _ = try connection.query(sql, [key, identity.deviceId, identity.platform.rawValue])
            return try Self.insert(identity, pushToken: pushToken, state: "PENDING_VERIFICATION", token: nil, connection)
        }
    }

    /// The registration of this device waiting for its code, if any (the newest).
    public func pending(bankClientId: String, userId: String, deviceId: String) async throws -> (identity: DeviceIdentity, pushToken: String)? {
        let sql = """
            SELECT platform, push_token, bank_client_id, user_id, device_id FROM devices
            WHERE \(identifiers.userColumn) = $1 AND device_id = $2 AND bank_client_id = $3 AND state = 'PENDING_VERIFICATION'
            ORDER BY id DESC LIMIT 1
            """
        return try await pool.withConnection { [key = identifiers.comparable(userId)] connection in
            guard let row = try connection.query(sql, [key, deviceId, bankClientId]).rows.first,
                  let platform = row[0].flatMap(Platform.init(rawValue:)), let pushToken = row[1] else { return nil }
            return (DeviceIdentity(bankClientId: row[2] ?? bankClientId, userId: row[3] ?? userId, deviceId: row[4] ?? deviceId, platform: platform), pushToken)
        }
    }

    /// Counts a wrong code against the waiting registration of this device; once `limit` wrong
    /// codes were entered the registration is dropped. Returns true when it was dropped.
    public func recordVerificationFailure(_ identity: DeviceIdentity, limit: Int) async throws -> Bool {
        let sql = """
            UPDATE devices SET verification_failures = verification_failures + 1, updated_at = now()
            WHERE \(identifiers.userColumn) = $1 AND device_id = $2 AND platform = $3 AND state = 'PENDING_VERIFICATION'
            RETURNING id, verification_failures
            """
        return try await pool.transaction { [key = identifiers.comparable(identity.userId)] connection in
            var dropped = false
            for row in try connection.query(sql, [key, identity.deviceId, identity.platform.rawValue]).rows {
                guard let id = row[0], (row.integer(1) ?? 0) >= limit else { continue }
                _ = try connection.query("DELETE FROM devices WHERE id = $1", [id])
                dropped = true
            }
            return dropped
        }
    }

    /// The subscribed device holding this token, if the token is known and not expired.
    public func authenticate(digest: Data) async throws -> AuthenticatedDevice? {
        let parameter = StoredToken.byteaParameter(digest)
        return try await pool.withConnection { connection in
            guard let row = try connection.query("""
                SELECT id, user_id FROM devices
                WHERE auth_token_hash = $1::bytea AND auth_token_expires_at > now() AND state = 'SUBSCRIBED'
                """, [parameter]).rows.first, let id = row[0].flatMap(Int64.init), let user = row[1] else { return nil }
            return AuthenticatedDevice(id: id, userId: user)
        }
    }

    private static func insert(_ identity: DeviceIdentity, pushToken: String, state: String, token: StoredToken?, _ connection: PostgresConnection) throws -> Int64 {
        guard let id = try connection.query("""
            INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, state,
                                 auth_token_hash, auth_token_expires_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8::bytea, to_timestamp($9))
            RETURNING id
            """, [identity.bankClientId, identity.userId, identity.userId.lowercased(), identity.deviceId, identity.platform.rawValue, pushToken, state,
                  token?.digestParameter, token?.expiresParameter]).scalar.flatMap(Int64.init) else {
            throw PostgresError(.unexpectedResult, "registering a device returned no id")
        }
        return id
    }
}
