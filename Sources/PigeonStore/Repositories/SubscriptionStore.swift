import Foundation
import PigeonDomain

/// Users' devices (subscriptions).
package struct SubscriptionStore: Sendable {
    private let pool: PostgresPool
    private let identifiers: UserIdentifiers

    package init(pool: PostgresPool, identifiers: UserIdentifiers) {
        self.pool = pool
        self.identifiers = identifiers
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
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::bytea)
                ON CONFLICT (user_id, device_id, platform, app_id)
                DO UPDATE SET push_token = EXCLUDED.push_token, bank_client_id = EXCLUDED.bank_client_id,
                              environment = EXCLUDED.environment, state = 'SUBSCRIBED', updated_at = now(),
                              encryption_key_id = EXCLUDED.encryption_key_id, encryption_public_key = EXCLUDED.encryption_public_key
                RETURNING id
                """, [bankClientId, userId, userId.lowercased(), deviceId, platform.rawValue, pushToken, appId, environment.rawValue,
                      encryptionKey?.keyId, encryptionKey.map { PostgresBytea.encode($0.publicKey) }])
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
            try connection.query("""
                WITH gone AS (DELETE FROM devices WHERE \(column) = $1 RETURNING *), \(RemovedDevices.noted(reason: "$2"))
                SELECT count(*) FROM gone
                """, [key, RemovedDevices.deletedByBank]).scalar.flatMap(Int.init) ?? 0
        }
    }

    /// For each user, whether they have at least one subscribed device; in the order given.
    package func exist(users: [String]) async throws -> [Bool] {
        let column = identifiers.userColumn
        let keys = PostgresArray.encode(users.map(identifiers.comparable))
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT EXISTS (SELECT 1 FROM devices d WHERE d.\(column) = u.key AND d.state = 'SUBSCRIBED')
                FROM unnest($1::text[]) WITH ORDINALITY AS u(key, position)
                ORDER BY u.position
                """, [keys]).rows.map { $0.boolean(0) ?? false }
        }
    }

    /// Subscribed devices of many users at once, keyed by the users' comparable form
    /// (`user_folded` when ids are case-insensitive, else the id as given).
    package func devices(users: [String]) async throws -> [String: [Device]] {
        let column = identifiers.userColumn
        let keys = PostgresArray.encode(users.map(identifiers.comparable))
        return try await pool.withConnection(idempotent: true) { connection in
            var devices: [String: [Device]] = [:]
            for row in try connection.query("""
                SELECT id, bank_client_id, user_id, device_id, platform, push_token, \(column), app_id, environment,
                       encryption_key_id, encryption_public_key
                FROM devices WHERE \(column) = ANY($1::text[]) AND state = 'SUBSCRIBED'
                """, [keys]).rows {
                guard let id = row[0].flatMap(Int64.init), let platform = row[4].flatMap(Platform.init(rawValue:)), let key = row[6] else { continue }
                devices[key, default: []].append(Device(
                    id: id, bankClientId: row[1] ?? "", userId: row[2] ?? "", deviceId: row[3] ?? "", platform: platform,
                    pushToken: row[5] ?? "", appId: row[7] ?? PushRoute.defaultApp,
                    environment: row[8].flatMap(PushEnvironment.init(rawValue:)) ?? .production,
                    encryptionKey: DeviceRegistry.encryptionKey(id: row[9], point: row[10])))
            }
            return devices
        }
    }

    /// How many subscribed devices each route (platform, app, environment) has.
    package func routeCounts() async throws -> [(route: PushRoute, devices: Int)] {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT platform, app_id, environment, count(*) FROM devices WHERE state = 'SUBSCRIBED'
                GROUP BY platform, app_id, environment ORDER BY platform, app_id, environment
                """).rows.compactMap { row in
                guard let platform = row.text(0).flatMap(Platform.init(rawValue:)), let count = row.integer(3) else { return nil }
                let environment = row.text(2).flatMap(PushEnvironment.init(rawValue:)) ?? .production
                return (PushRoute(platform: platform, appId: row.text(1) ?? PushRoute.defaultApp, environment: platform == .ios ? environment : .production), count)
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
            try connection.query("""
                WITH gone AS (DELETE FROM devices WHERE id = ANY($1::bigint[]) RETURNING *), \(RemovedDevices.noted(reason: "$2"))
                SELECT count(*) FROM gone
                """, [ids, RemovedDevices.deadToken]).scalar.flatMap(Int.init) ?? 0
        }
    }

    /// Records a successful delivery to these devices (for `deviceExpiredPeriodMillis`; see
    /// ``DeviceReach``).
    package func markDelivered(deviceIds: [Int64]) async throws {
        guard !deviceIds.isEmpty else { return }
        try await pool.withConnection { connection in
            try DeviceReach.record(deviceIds: deviceIds, connection)
        }
    }

    /// Every device of `user`.
    package func devices(user: String) async throws -> [Device] {
        let column = identifiers.userColumn
        let key = identifiers.comparable(user)
        return try await pool.withConnection(idempotent: true) { connection in
            try connection.query("""
                SELECT id, bank_client_id, user_id, device_id, platform, push_token, app_id, environment,
                       encryption_key_id, encryption_public_key
                FROM devices WHERE \(column) = $1 ORDER BY id
                """, [key]).rows.compactMap { row in
                guard let id = row[0].flatMap(Int64.init), let platform = row[4].flatMap(Platform.init(rawValue:)) else { return nil }
                return Device(id: id, bankClientId: row[1] ?? "", userId: row[2] ?? "", deviceId: row[3] ?? "", platform: platform,
                              pushToken: row[5] ?? "", appId: row[6] ?? PushRoute.defaultApp,
                              environment: row[7].flatMap(PushEnvironment.init(rawValue:)) ?? .production,
                              encryptionKey: DeviceRegistry.encryptionKey(id: row[8], point: row[9]))
            }
        }
    }
}
