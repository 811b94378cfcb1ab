import Foundation
import PigeonDomain
import PostgresDriver

/// Users' devices (subscriptions).
package struct SubscriptionStore: Sendable {
    private let pool: PostgresPool
    private let identifiers: UserIdentifiers
    /// How closely a device's last reach is kept (``ReachPrecision``).
    private let reachPrecision: Duration

    /// `reachPrecision`: ``ReachPrecision/forExpiry(_:)`` of the hygiene period the gateway runs
    /// with (an hour when not given).
    package init(pool: PostgresPool, identifiers: UserIdentifiers, reachPrecision: Duration = DeviceReach.defaultPrecision) {
        self.pool = pool
        self.identifiers = identifiers
        self.reachPrecision = reachPrecision
    }


    /// Subscribes a device, or updates the push token of a known one (same user, device id,
    /// platform and app). Returns the device's row id.
    @discardableResult
    package func subscribe(bankClientId: String, userId: String, deviceId: String, platform: Platform, pushToken: String,
                          appId: String = PushRoute.defaultApp, environment: PushEnvironment = .production,
                          encryptionKey: DeviceEncryptionKey? = nil) async throws -> Int64 {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, app_id, environment,
                                     encryption_key_id, encryption_public_key)
                VALUES (\(bankClientId), \(userId), \(userId.lowercased()), \(deviceId), \(platform.rawValue), \(pushToken), \(appId),
                        \(environment.rawValue), \(encryptionKey?.keyId), \(encryptionKey?.publicKey)::bytea)
                ON CONFLICT (user_id, device_id, platform, app_id)
                DO UPDATE SET push_token = EXCLUDED.push_token, bank_client_id = EXCLUDED.bank_client_id,
                              environment = EXCLUDED.environment, state = 'SUBSCRIBED', updated_at = now(),
                              encryption_key_id = EXCLUDED.encryption_key_id, encryption_public_key = EXCLUDED.encryption_public_key
                RETURNING id
                """)
            guard let id = rows.scalar.flatMap(Int64.init) else {
                throw PostgresError(.unexpectedResult, "subscribing returned no device id")
            }
            return id
        }
    }

    /// Erases every device of `user`; returns how many there were.
    package func deleteAll(user: String) async throws -> Int {
        let column = identifiers.userColumn
        let key = identifiers.comparable(user)
        return try await pool.withConnection { connection in
            try connection.query(sql: """
                WITH gone AS (DELETE FROM devices WHERE \(column) = $1 RETURNING *), \(RemovedDevices.noted(reason: "$2"))
                SELECT count(*) FROM gone
                """, [key, RemovedDevices.deletedByBank]).scalar(as: Int.self, "the count of devices deleted")
        }
    }

    /// For each user, whether they have at least one subscribed device; in the order given.
    package func exist(users: [String]) async throws -> [Bool] {
        let column = identifiers.userColumnSQL
        let keys = users.map(identifiers.comparable)
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT EXISTS (SELECT 1 FROM devices d WHERE d.\(sql: column) = u.key AND d.state = 'SUBSCRIBED') AS subscribed
                FROM unnest(\(keys)::text[]) WITH ORDINALITY AS u(key, position)
                ORDER BY u.position
                """).decoded { try $0.decode("subscribed", as: Bool.self) }
        }
    }

    /// Subscribed devices of many users at once, keyed by the users' comparable form
    /// (`user_folded` when ids are case-insensitive, else the id as given).
    package func devices(users: [String]) async throws -> [String: [Device]] {
        let column = identifiers.userColumnSQL
        let keys = users.map(identifiers.comparable)
        return try await pool.withConnection(idempotent: true) { connection in
            let found = try connection.query("""
                SELECT id, bank_client_id, user_id, device_id, platform, push_token, \(sql: column) AS user_key, app_id, environment,
                       encryption_key_id, encryption_public_key
                FROM devices WHERE \(sql: column) = ANY(\(keys)::text[]) AND state = 'SUBSCRIBED'
                  AND platform = ANY(\(KnownValues.platforms)::text[]) AND environment = ANY(\(KnownValues.environments)::text[])
                """).decoded { row in (key: try row.decode("user_key", as: String.self), device: try Self.device(row)) }
            return Dictionary(grouping: found, by: \.key).mapValues { $0.map(\.device) }
        }
    }

    /// How many subscribed devices each route (platform, app, environment) has.
    package func routeCounts() async throws -> [(route: PushRoute, devices: Int)] {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT platform, app_id, environment, count(*) AS devices FROM devices
                WHERE state = 'SUBSCRIBED' AND platform = ANY(\(KnownValues.platforms)::text[]) AND environment = ANY(\(KnownValues.environments)::text[])
                GROUP BY platform, app_id, environment ORDER BY platform, app_id, environment
                """).decoded { row in
                let platform = try row.decode("platform", as: Platform.self)
                let environment = try row.decodeIfPresent("environment", as: PushEnvironment.self) ?? .production
                return (PushRoute(platform: platform, appId: try row.decodeIfPresent("app_id") ?? PushRoute.defaultApp,
                                  environment: platform == .ios ? environment : .production), try row.decode("devices", as: Int.self))
            }
        }
    }

    /// The comparable form of a user id under the configured rule.
    package func key(for user: String) -> String { identifiers.comparable(user) }

    /// Deletes devices whose push tokens the push services declared dead.
    @discardableResult
    package func remove(deviceIds: [Int64]) async throws -> Int {
        guard !deviceIds.isEmpty else { return 0 }
        let ids = PostgresArray.encode(deviceIds.map(String.init))
        return try await pool.withConnection { connection in
            try connection.query(sql: """
                WITH gone AS (DELETE FROM devices WHERE id = ANY($1::bigint[]) RETURNING *), \(RemovedDevices.noted(reason: "$2"))
                SELECT count(*) FROM gone
                """, [ids, RemovedDevices.deadToken]).scalar(as: Int.self, "the count of dead-token devices removed")
        }
    }

    /// Records a successful delivery to these devices (for `deviceExpiredPeriodMillis`; see
    /// ``DeviceReach``).
    package func markDelivered(deviceIds: [Int64]) async throws {
        guard !deviceIds.isEmpty else { return }
        try await pool.withConnection { connection in
            try DeviceReach.record(deviceIds: deviceIds, precision: reachPrecision, connection)
        }
    }

    /// Every device of `user`.
    package func devices(user: String) async throws -> [Device] {
        let column = identifiers.userColumnSQL
        let key = identifiers.comparable(user)
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT id, bank_client_id, user_id, device_id, platform, push_token, app_id, environment,
                       encryption_key_id, encryption_public_key
                FROM devices WHERE \(sql: column) = \(key) AND platform = ANY(\(KnownValues.platforms)::text[])
                  AND environment = ANY(\(KnownValues.environments)::text[]) ORDER BY id
                """).decoded(Self.device)
        }
    }


    /// A device from the columns `devices` names them by.
    static func device(_ row: PostgresRow) throws -> Device {
        Device(id: try row.decode("id"), bankClientId: try row.decode("bank_client_id"), userId: try row.decode("user_id"),
               deviceId: try row.decode("device_id"), platform: try row.decode("platform"), pushToken: try row.decode("push_token"),
               appId: try row.decodeIfPresent("app_id") ?? PushRoute.defaultApp,
               environment: try row.decodeIfPresent("environment") ?? .production,
               encryptionKey: try DeviceRegistry.encryptionKey(id: row.decodeIfPresent("encryption_key_id"), point: row.decodeIfPresent("encryption_public_key")))
    }
}
