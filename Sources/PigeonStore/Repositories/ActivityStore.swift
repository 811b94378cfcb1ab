import Foundation
import PigeonCore
import PigeonDomain
import PostgresDriver

/// Live Activities and widget refreshes in PostgreSQL (CONTRACT §9): the phones' push-to-start
/// and update tokens, the bank's activities and their recipients, and the queue of pushes the
/// activity engine claims under a lease. Every event of an activity gets an `aps.timestamp`
/// larger than the last one, and a device has at most one push waiting per activity: a newer
/// event replaces one not yet pushed, so nothing is ever sent out of order.
package struct ActivityStore: Sendable {
    let pool: PostgresPool
    let identifiers: UserIdentifiers

    package init(pool: PostgresPool, identifiers: UserIdentifiers) {
        self.pool = pool
        self.identifiers = identifiers
    }

    /// What `startActivity` did.
    package typealias StartOutcome = ActivityStartOutcome
    /// What an update or end did.
    package typealias EventOutcome = ActivityEventOutcome
    /// What the phone's update token call did.
    package typealias TokenOutcome = ActivityTokenOutcome

    // MARK: Phones

    /// The most activity types one device keeps push-to-start tokens for.
    package static let maximumStartTokensPerDevice = ActivityFields.maximumStartTokensPerDevice

    /// Stores an iPhone's push-to-start token for an activity type (replacing the last one);
    /// false when the device already has tokens for ``maximumStartTokensPerDevice`` other types.
    package func saveStartToken(deviceRowId: Int64, activityType: String, token: String) async throws -> Bool {
        try await pool.transaction { connection in
            // The device's row serializes its token calls, so two at once cannot both pass the count.
            try connection.query("SELECT 1 FROM devices WHERE id = \(String(deviceRowId)) FOR UPDATE")
            return try connection.query("""
                INSERT INTO activity_start_tokens (device_row_id, activity_type, token)
                SELECT \(String(deviceRowId)), \(activityType), \(token)
                WHERE EXISTS (SELECT 1 FROM activity_start_tokens WHERE device_row_id = \(String(deviceRowId)) AND activity_type = \(activityType))
                   OR (SELECT count(*) FROM activity_start_tokens WHERE device_row_id = \(String(deviceRowId))) < \(String(Self.maximumStartTokensPerDevice))
                ON CONFLICT (device_row_id, activity_type) DO UPDATE SET token = EXCLUDED.token, updated_at = now()
                """).affected > 0
        }
    }

    /// Stores a running activity's update token for a device: the activity is RUNNING there,
    /// and what waited for the token (an update, an end) is due now.
    package func saveUpdateToken(activityId: String, deviceRowId: Int64, token: String) async throws -> TokenOutcome {
        try await pool.transaction { connection in
            try Self.lock(activities: [activityId], connection)
            let state = try connection.query("""
                SELECT state FROM activity_devices WHERE activity_id = \(activityId) AND device_row_id = \(String(deviceRowId))
                """).decodedFirst { try $0.decode("state", as: String.self) }
            guard let state else { return .notFound }
            guard state != "ENDED" else { return .ended }
            try connection.query("""
                UPDATE activity_devices SET update_token = \(token), state = 'RUNNING' WHERE activity_id = \(activityId) AND device_row_id = \(String(deviceRowId))
                """)
            try connection.query("""
                UPDATE activity_pushes SET next_attempt_at = now() WHERE activity_id = \(activityId) AND device_row_id = \(String(deviceRowId)) AND lease_owner IS NULL
                """)
            return .saved
        }
    }

    /// The phone ended the activity: no more pushes to this device for it.
    package func endedOnDevice(activityId: String, deviceRowId: Int64) async throws -> Bool {
        try await pool.transaction { connection in
            try Self.lock(activities: [activityId], connection)
            let changed = try connection.query("""
                UPDATE activity_devices SET state = 'ENDED', update_token = NULL WHERE activity_id = \(activityId) AND device_row_id = \(String(deviceRowId))
                """).affected
            try connection.query("DELETE FROM activity_pushes WHERE activity_id = \(activityId) AND device_row_id = \(String(deviceRowId))")
            return changed > 0
        }
    }

    // MARK: The bank

    /// Starts an activity: every subscribed device of the recipients that can show it (an iPhone
    /// with a push-to-start token for the type; an Android device, by data message) gets the
    /// start. `now` gives the first `aps.timestamp`.
    package func start(_ start: ActivityStart, now: Date) async throws -> StartOutcome {
        let users = PostgresArray.encode(start.recipients)
        let lookup = PostgresArray.encode(start.recipients.map(identifiers.comparable))
        let column = identifiers.userColumn
        let content = Self.contentParameters(start.content)
        return try await pool.transaction { connection in
            guard let timestamp = try connection.query("""
                INSERT INTO activities (activity_id, activity_type, attributes, content_state, last_timestamp) VALUES (\(start.activityId), \(start.activityType), \(start.attributes), \(start.content.contentState ?? "{}"), \(String(Self.seconds(now))))
                ON CONFLICT (activity_id) DO NOTHING RETURNING last_timestamp
                """)
                .decodedFirst({ String(try $0.decode("last_timestamp", as: Int64.self)) })
            else { return .duplicate }
            try connection.query("""
                INSERT INTO activity_recipients (activity_id, position, user_id)
                SELECT \(start.activityId), r.position, r.user_id FROM unnest(\(users)::text[]) WITH ORDINALITY AS r(user_id, position)
                """)
            try connection.query(sql: """
                INSERT INTO activity_devices (activity_id, device_row_id, user_id, state)
                SELECT $1, d.id, min(r.user_id), 'STARTING'
                FROM unnest($2::text[], $3::text[]) AS r(user_id, lookup)
                JOIN devices d ON d.\(column) = r.lookup AND d.state = 'SUBSCRIBED'
                LEFT JOIN activity_start_tokens st ON st.device_row_id = d.id AND st.activity_type = $4
                WHERE (d.platform = 'IOS' AND st.token IS NOT NULL) OR d.platform IN ('ANDROID', 'RUSTORE', 'HUAWEI')
                GROUP BY d.id
                """, [start.activityId, users, lookup, start.activityType])
            try Self.queue(activityId: start.activityId, kind: .start, timestamp: timestamp, content: content, connection)
            return .started(try Self.states(activityId: start.activityId, connection))
        }
    }

    /// An update or the end of an activity, queued for every device it reaches that has not
    /// ended it. Its timestamp is larger than that of every event a device has been sent (or is
    /// being sent), and is real time where it can be: an event that arrives while the previous
    /// one reached no device yet replaces it under the same timestamp, so a bank sending several
    /// events a second does not push the timestamps ahead of the clock (one second per event).
    package func event(activityId: String, kind: ActivityPushKind, content: ActivityContent, now: Date) async throws -> EventOutcome {
        try await pool.transaction { connection in
            guard let ended = try connection.query("SELECT ended FROM activities WHERE activity_id = \(activityId) FOR UPDATE")
                .decodedFirst({ try $0.decodeIfPresent("ended", as: Bool.self) ?? false }) else {
                return .notFound
            }
            guard !ended else { return .ended }
            // An end without a content state ends on the newest one sent.
            let updated = try connection.query("""
                UPDATE activities a SET last_timestamp = CASE
                        WHEN EXISTS (SELECT 1 FROM activity_devices ad WHERE ad.activity_id = a.activity_id AND ad.last_sent_timestamp >= a.last_timestamp)
                          OR EXISTS (SELECT 1 FROM activity_pushes p WHERE p.activity_id = a.activity_id
                                     AND p.event_timestamp = a.last_timestamp AND p.lease_owner IS NOT NULL)
                        THEN GREATEST(a.last_timestamp + 1, \(String(Self.seconds(now)))) ELSE GREATEST(a.last_timestamp, \(String(Self.seconds(now)))) END,
                    updated_at = now(), ended = \(kind == .end ? "true" : "false"),
                    content_state = COALESCE(\(content.contentState), content_state)
                WHERE activity_id = \(activityId) RETURNING last_timestamp, content_state
                """)
                .decodedFirst { row in (timestamp: try row.decode("last_timestamp", as: Int64.self), contentState: try row.decodeIfPresent("content_state", as: String.self)) }
            guard let updated else { throw PostgresError(.unexpectedResult, "the locked activity was not updated") }
            var content = content
            content.contentState = updated.contentState ?? content.contentState
            if kind == .end {
                // A start not yet pushed never needs an end: that device is done.
                try connection.query("""
                    WITH dropped AS (
                        DELETE FROM activity_pushes WHERE activity_id = \(activityId) AND kind = 'start' AND lease_owner IS NULL RETURNING device_row_id
                    )
                    UPDATE activity_devices SET state = 'ENDED' WHERE activity_id = \(activityId) AND device_row_id IN (SELECT device_row_id FROM dropped)
                    """)
            }
            let queued = try Self.queue(activityId: activityId, kind: kind, timestamp: String(updated.timestamp),
                                        content: Self.contentParameters(content), connection)
            return .queued(devices: queued)
        }
    }

    /// Each recipient's state in the order sent, or `nil` for an unknown activity.
    package func status(activityId: String) async throws -> [(user: String, state: ActivityRecipientState)]? {
        try await pool.withConnection(idempotent: true) { connection in
            guard try connection.query("SELECT 1 FROM activities WHERE activity_id = \(activityId)").rows.first != nil else { return nil }
            return try Self.states(activityId: activityId, connection)
        }
    }

    /// Queues a widget refresh for every subscribed iPhone and Android device of `users`;
    /// returns how many devices each user has that get it, in the order given.
    package func refreshWidgets(users: [String]) async throws -> [(user: String, devices: Int)] {
        try await queueRefresh(users: users, kind: .widgets, activityId: "", platforms: ["IOS", "ANDROID", "RUSTORE", "HUAWEI"])
    }

    /// Queues a controls refresh for every subscribed iPhone of `users` (controls are iOS's);
    /// returns how many devices each user has that get it, in the order given.
    package func refreshControls(users: [String]) async throws -> [(user: String, devices: Int)] {
        try await queueRefresh(users: users, kind: .controls, activityId: "#controls", platforms: ["IOS"])
    }

    /// One refresh row per subscribed device of `users` on `platforms`, under `activityId` (a
    /// refresh already waiting is made due again rather than queued twice).
    private func queueRefresh(users: [String], kind: ActivityPushKind, activityId: String, platforms: [String]) async throws -> [(user: String, devices: Int)] {
        let column = identifiers.userColumn
        let lookup = users.map(identifiers.comparable)
        return try await pool.transaction { connection in
            let rows = try connection.query(sql: """
                WITH targets AS (
                    SELECT DISTINCT d.id, d.\(column) AS lookup FROM devices d
                    WHERE d.\(column) = ANY($1::text[]) AND d.state = 'SUBSCRIBED' AND d.platform = ANY($4::text[])
                ),
                queued AS (
                    INSERT INTO activity_pushes (activity_id, device_row_id, kind, event_timestamp)
                    SELECT $2, id, $3, 0 FROM targets
                    ON CONFLICT (activity_id, device_row_id) DO UPDATE SET attempts = 0, last_error = NULL,
                        next_attempt_at = CASE WHEN activity_pushes.lease_owner IS NULL THEN now() ELSE activity_pushes.next_attempt_at END
                    RETURNING device_row_id
                )
                SELECT t.lookup, count(*) AS devices FROM targets t JOIN queued q ON q.device_row_id = t.id GROUP BY t.lookup
                """, [PostgresArray.encode(lookup), activityId, kind.rawValue, PostgresArray.encode(platforms)]).decoded { row in
                (try row.decode("lookup", as: String.self), try row.decode("devices", as: Int.self))
            }
            let counts = Dictionary(rows, uniquingKeysWith: { first, _ in first })
            return zip(users, lookup).map { ($0, counts[$1] ?? 0) }
        }
    }

    // MARK: The engine's queue

    /// Up to `limit` due pushes that can go now, leased to `owner` for `lease`: starts and
    /// widget refreshes, Android pushes, and iPhone updates and ends once the phone sent its
    /// update token.
    package func claim(owner: String, limit: Int, lease: Duration) async throws -> [ClaimedActivityPush] {
        let limit = max(1, min(limit, 10_000))
        // Rows a newer version wrote (a kind, platform or environment this binary does not know)
        // are not claimed: they wait for a process that knows them, and the others flow. In a
        // transaction: a row that still does not decode fails the claim and rolls its leases back
        // (loudly), instead of vanishing from the claim while it stays leased.
        let known = [KnownValues.activityPushKinds, KnownValues.platforms, KnownValues.environments]
        return try await pool.transaction { connection in
            try connection.query(sql: """
                WITH due AS (
                    SELECT p.activity_id, p.device_row_id FROM activity_pushes p
                    JOIN devices d ON d.id = p.device_row_id
                    LEFT JOIN activity_devices ad ON ad.activity_id = p.activity_id AND ad.device_row_id = p.device_row_id
                    WHERE p.next_attempt_at <= now()
                      AND (p.kind IN ('start', 'widgets', 'controls') OR d.platform <> 'IOS' OR ad.update_token IS NOT NULL)
                      AND p.kind = ANY($3::text[]) AND d.platform = ANY($4::text[])
                      AND d.environment = ANY($5::text[])
                    ORDER BY p.next_attempt_at LIMIT \(limit) FOR UPDATE OF p SKIP LOCKED
                )
                UPDATE activity_pushes p
                SET lease_owner = $1, attempts = p.attempts + 1, next_attempt_at = now() + make_interval(secs => $2::double precision)
                FROM due
                JOIN devices d ON d.id = due.device_row_id
                LEFT JOIN activity_devices ad ON ad.activity_id = due.activity_id AND ad.device_row_id = due.device_row_id
                LEFT JOIN activities a ON a.activity_id = due.activity_id
                LEFT JOIN activity_start_tokens st ON st.device_row_id = due.device_row_id AND st.activity_type = a.activity_type
                WHERE p.activity_id = due.activity_id AND p.device_row_id = due.device_row_id
                RETURNING p.activity_id, a.activity_type, p.kind, p.event_timestamp, p.content_state, p.alert_title, p.alert_body,
                    p.stale_date, p.dismissal_date, p.relevance_score, p.priority, a.attributes,
                    d.id, d.bank_client_id, d.user_id, d.device_id, d.platform, d.push_token, d.app_id, d.environment,
                    CASE WHEN d.platform <> 'IOS' OR p.kind IN ('widgets', 'controls') THEN d.push_token WHEN p.kind = 'start' THEN st.token ELSE ad.update_token END AS token,
                    COALESCE(ad.last_sent_timestamp, 0) AS last_sent_timestamp, p.attempts
                """, [owner, String(lease.inSeconds)] + known).decoded(Self.claimed)
        }
    }

    /// Writes what became of claims `owner` still holds. A push whose row a newer event
    /// replaced while it was in flight leaves the row due at once (the newer event goes next).
    package func record(_ results: [ActivityPushResult], owner: String) async throws {
        guard !results.isEmpty else { return }
        try await pool.transaction { connection in
            try Self.lock(activities: results.map(\.claim.activityId), connection)
            for result in results { try Self.record(result, owner: owner, connection) }
        }
    }

    /// Hands back every claim `owner` holds, due at once; returns how many.
    @discardableResult
    package func release(owner: String) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query("UPDATE activity_pushes SET lease_owner = NULL, next_attempt_at = now() WHERE lease_owner = \(owner)").affected
        }
    }

    // MARK: Broadcast channels

    /// A broadcast channel as stored.
    package struct Channel: Sendable, Equatable {
        package var channelId: String
        package var appId: String
        package var activityType: String
        package var storagePolicy: Int

        package init(channelId: String, appId: String, activityType: String, storagePolicy: Int) {
            self.channelId = channelId
            self.appId = appId
            self.activityType = activityType
            self.storagePolicy = storagePolicy
        }
    }

    /// Stores a channel Apple created.
    package func saveChannel(_ channel: Channel) async throws {
        _ = try await pool.withConnection { connection in
            try connection.query("""
                INSERT INTO activity_channels (channel_id, app_id, activity_type, storage_policy) VALUES (\(channel.channelId), \(channel.appId), \(channel.activityType), \(String(channel.storagePolicy)))
                ON CONFLICT (channel_id) DO NOTHING
                """)
        }
    }

    /// The stored channel, or `nil`.
    package func channel(id: String) async throws -> Channel? {
        try await pool.withConnection(idempotent: true) { connection in
            try connection.query("SELECT channel_id, app_id, activity_type, storage_policy FROM activity_channels WHERE channel_id = \(id)")
                .decodedFirst { Channel(channelId: try $0.decode("channel_id"), appId: try $0.decode("app_id"), activityType: try $0.decode("activity_type"),
                                        storagePolicy: try $0.decode("storage_policy")) }
        }
    }

    /// Forgets a channel; returns whether it was stored.
    @discardableResult
    package func deleteChannel(id: String) async throws -> Bool {
        try await pool.withConnection { connection in
            try connection.query("DELETE FROM activity_channels WHERE channel_id = \(id)").affected > 0
        }
    }

    /// The `aps.timestamp` of a channel's next broadcast: larger than every earlier one.
    package func nextChannelTimestamp(id: String, now: Date) async throws -> Int64? {
        try await pool.withConnection { connection in
            try connection.query("""
                UPDATE activity_channels SET last_timestamp = GREATEST(last_timestamp + 1, \(String(Self.seconds(now)))) WHERE channel_id = \(id) RETURNING last_timestamp
                """).decodedFirst { try $0.decode("last_timestamp", as: Int64.self) }
        }
    }

    // MARK: Helpers

    /// Locks the activities' rows, in id order. Every transaction that changes an activity's
    /// devices and pushes takes its activity's lock first (the engine's record, the phone's token
    /// and end calls, the bank's events), so two of them never lock those rows in opposite orders
    /// (the phone ending an activity while the engine records its last push deadlocked).
    private static func lock(activities ids: [String], _ connection: PostgresConnection) throws {
        let ids = Set(ids.filter { !$0.isEmpty && !$0.hasPrefix("#") })  // widget and controls refreshes belong to no activity
        guard !ids.isEmpty else { return }
        try connection.query("SELECT 1 FROM activities WHERE activity_id = ANY(\(PostgresArray.encode(ids.sorted()))::text[]) ORDER BY activity_id FOR UPDATE")
    }

    private static func seconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

    /// `content_state` … `priority` as statement parameters.
    private static func contentParameters(_ content: ActivityContent) -> [String?] {
        [content.contentState, content.alertTitle, content.alertBody, content.staleDate.map(String.init), content.dismissalDate.map(String.init),
         content.relevanceScore.map { String($0) }, content.priority.map(String.init)]
    }

    /// Queues `kind` for every device of the activity that has not ended it, replacing a push
    /// not yet sent; a start stays a start with the newer content, even while it is in flight:
    /// if its push succeeds, recording it turns the row into an update, and if its process dies,
    /// the start goes again once the lease ends (an update alone would wait for a token that
    /// never comes). Returns how many.
    @discardableResult
    private static func queue(activityId: String, kind: ActivityPushKind, timestamp: String, content: [String?],
                              _ connection: PostgresConnection) throws -> Int {
        try connection.query(sql: """
            INSERT INTO activity_pushes (activity_id, device_row_id, kind, event_timestamp, content_state, alert_title, alert_body,
                                         stale_date, dismissal_date, relevance_score, priority)
            SELECT $1, ad.device_row_id, $2, $3::bigint, $4, $5, $6, $7::bigint, $8::bigint, $9::double precision, $10::integer
            FROM activity_devices ad WHERE ad.activity_id = $1 AND ad.state <> 'ENDED'
            ON CONFLICT (activity_id, device_row_id) DO UPDATE SET
                kind = CASE WHEN activity_pushes.kind = 'start' AND EXCLUDED.kind = 'update' THEN 'start' ELSE EXCLUDED.kind END,
                event_timestamp = EXCLUDED.event_timestamp, content_state = EXCLUDED.content_state,
                alert_title = EXCLUDED.alert_title, alert_body = EXCLUDED.alert_body, stale_date = EXCLUDED.stale_date,
                dismissal_date = EXCLUDED.dismissal_date, relevance_score = EXCLUDED.relevance_score, priority = EXCLUDED.priority,
                attempts = 0, last_error = NULL,
                next_attempt_at = CASE WHEN activity_pushes.lease_owner IS NULL THEN now() ELSE activity_pushes.next_attempt_at END
            """, [activityId, kind.rawValue, timestamp] + content).affected
    }

    private static func states(activityId: String, _ connection: PostgresConnection) throws -> [(user: String, state: ActivityRecipientState)] {
        try connection.query("""
            SELECT r.user_id, CASE
                WHEN count(ad.device_row_id) = 0 THEN 'NO_TOKEN'
                WHEN bool_or(ad.state = 'RUNNING') THEN 'RUNNING'
                WHEN bool_or(ad.state = 'STARTING') THEN 'STARTING'
                ELSE 'ENDED' END AS state
            FROM activity_recipients r
            LEFT JOIN activity_devices ad ON ad.activity_id = r.activity_id AND ad.user_id = r.user_id
            WHERE r.activity_id = \(activityId) GROUP BY r.position, r.user_id ORDER BY r.position
            """).decoded { row in
            (user: try row.decode("user_id", as: String.self), state: try row.decode("state", as: ActivityRecipientState.self))
        }
    }

    /// A claimed row; throws when it does not decode (the claim then rolls back).
    private static func claimed(_ row: PostgresRow) throws(PostgresError) -> ClaimedActivityPush {
        let device = Device(id: try row.decode("id"), bankClientId: try row.decode("bank_client_id"),
                            userId: try row.decode("user_id"), deviceId: try row.decode("device_id"),
                            platform: try row.decode("platform"), pushToken: try row.decode("push_token"),
                            appId: try row.decodeIfPresent("app_id") ?? PushRoute.defaultApp,
                            environment: try row.decodeIfPresent("environment") ?? .production)
        let content = ActivityContent(
            contentState: try row.decodeIfPresent("content_state"), alertTitle: try row.decodeIfPresent("alert_title"),
            alertBody: try row.decodeIfPresent("alert_body"), staleDate: try row.decodeIfPresent("stale_date"),
            dismissalDate: try row.decodeIfPresent("dismissal_date"), relevanceScore: try row.decodeIfPresent("relevance_score"),
            priority: try row.decodeIfPresent("priority"))
        return ClaimedActivityPush(activityId: try row.decode("activity_id"), activityType: try row.decodeIfPresent("activity_type") ?? "",
                                   kind: try row.decode("kind"), timestamp: try row.decode("event_timestamp"), content: content,
                                   attributes: try row.decodeIfPresent("attributes"), device: device,
                                   token: try row.decodeIfPresent("token") ?? "",
                                   lastSentTimestamp: try row.decode("last_sent_timestamp"),
                                   attempts: try row.decode("attempts"))
    }

    private static func record(_ result: ActivityPushResult, owner: String, _ connection: PostgresConnection) throws {
        let claim = result.claim
        let key = [claim.activityId, String(claim.device.id), owner, String(claim.timestamp)]
        // The row is this claim's while it holds the lease and no newer event replaced it.
        func finish() throws {
            let deleted = try connection.query(sql: """
                DELETE FROM activity_pushes WHERE activity_id = $1 AND device_row_id = $2 AND lease_owner = $3 AND event_timestamp = $4
                """, key).affected
            if deleted == 0 { try handBack(error: nil) }
        }
        func handBack(error: String?, at: Date? = nil) throws {
            try connection.query(sql: """
                UPDATE activity_pushes SET lease_owner = NULL, last_error = COALESCE($5, last_error),
                    next_attempt_at = CASE WHEN event_timestamp = $4 AND $6::double precision IS NOT NULL THEN to_timestamp($6::double precision) ELSE now() END
                WHERE activity_id = $1 AND device_row_id = $2 AND lease_owner = $3
                """, key + [error.map { String($0.prefix(500)) }, at.map { String($0.timeIntervalSince1970) }])
        }
        switch result.change {
        case .sent:
            if claim.kind == .start {
                // A newer event replaced this start while it was in flight: the start is done, so
                // what waits is the newer content as an update.
                try connection.query(sql: """
                    UPDATE activity_pushes SET kind = 'update'
                    WHERE activity_id = $1 AND device_row_id = $2 AND lease_owner = $3 AND event_timestamp <> $4 AND kind = 'start'
                    """, key)
            }
            try finish()
            guard !claim.kind.isRefresh else { return }
            let startingUntilToken = claim.kind == .start && claim.device.platform == .ios
            try connection.query("""
                UPDATE activity_devices SET last_sent_timestamp = GREATEST(last_sent_timestamp, \(String(claim.timestamp))),
                    state = CASE WHEN state = 'ENDED' OR \(claim.kind.rawValue) = 'end' THEN 'ENDED'
                                 WHEN \(startingUntilToken ? "true" : "false") AND update_token IS NULL THEN 'STARTING' ELSE 'RUNNING' END
                WHERE activity_id = \(claim.activityId) AND device_row_id = \(String(claim.device.id))
                """)
        case .dropped, .failed:
            try finish()
        case .retry(let at, let error):
            try handBack(error: error, at: at)
        case .tokenDead(let reason):
            switch (claim.kind, claim.device.platform) {
            case (.start, .ios):
                // Only that push-to-start token: the device cannot start this type until the phone sends a new one.
                try connection.query("DELETE FROM activity_start_tokens WHERE device_row_id = \(String(claim.device.id)) AND token = \(claim.token)")
                try finish()
                try connection.query("DELETE FROM activity_devices WHERE activity_id = \(claim.activityId) AND device_row_id = \(String(claim.device.id)) AND update_token IS NULL")
            case (.update, .ios), (.end, .ios):
                // Only that update token: the push waits for the phone's next one.
                try connection.query("""
                    UPDATE activity_devices SET update_token = NULL WHERE activity_id = \(claim.activityId) AND device_row_id = \(String(claim.device.id)) AND update_token = \(claim.token)
                    """)
                try handBack(error: reason)
            default:
                try finish()
            }
        }
    }
}
