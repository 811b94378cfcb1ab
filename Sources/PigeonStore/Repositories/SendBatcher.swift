import Foundation
import PigeonCore
import PigeonDomain
import PostgresDriver
import Synchronization

/// Group commit for sendNotification: concurrent sends are written by one statement and one
/// commit. Nothing waits on purpose — a flush takes whatever queued up while the previous one
/// ran — so a lone client pays no extra latency while 64 clients share their commits.
///
/// Every caller still returns only after its own notification and deliveries are committed. A
/// batch that fails is retried one notification at a time, so one bad row cannot fail the others.
final class SendBatcher: Sendable {
    /// How much one flush may carry.
    struct Limits: Sendable {
        var notifications = 256
        var recipients = 20_000
        /// Flushes running at once, each on its own connection.
        var concurrentFlushes = 2
        /// Deliveries written by one statement; a bigger send takes several, in one transaction.
        var recipientsPerStatement = 50_000
        /// How long storing one big send may take in all (each statement also keeps the pool's
        /// statement timeout).
        var bigSendTimeLimit: Duration = .seconds(600)
        /// When a day's deliveries are analyzed again, and how long a send's own analysis waits
        /// for the partition.
        var statistics = FreshStatistics.Policy()
    }

    /// A notification ready to insert, with its recipients already de-duplicated.
    struct Item: Sendable {
        var notification: PushNotification
        var recipients: [String]
        var continuation: CheckedContinuation<SendOutcome, any Error>
    }

    private struct State {
        var pending: [Item] = []
        var flushing = 0
    }

    private let pool: PostgresPool
    private let identifiers: UserIdentifiers
    private let limits: Limits
    private let state = Mutex(State())
    private let now: @Sendable () -> Date
    private let statistics: FreshStatistics

    init(pool: PostgresPool, identifiers: UserIdentifiers, limits: Limits = Limits(), logger: Logger? = nil,
         now: @escaping @Sendable () -> Date = Date.init) {
        self.pool = pool
        self.identifiers = identifiers
        self.limits = limits
        self.now = now
        self.statistics = FreshStatistics(pool: pool, policy: limits.statistics, logger: logger)
    }

    func send(_ notification: PushNotification) async throws -> SendOutcome {
        let recipients = identifiers.unique(notification.recipients)
        return try await withCheckedThrowingContinuation { continuation in
            let startFlush = state.withLock { state in
                state.pending.append(Item(notification: notification, recipients: recipients, continuation: continuation))
                guard state.flushing < limits.concurrentFlushes else { return false }
                state.flushing += 1
                return true
            }
            if startFlush { flush() }
        }
    }

    /// Queues a job that keeps writing batches until nothing is pending.
    private func flush() {
        pool.submit { [self] connection in
            while let batch = nextBatch() {
                if let lost = write(batch, on: connection) {
                    // The connection died under this batch (answered with the error: it may
                    // have committed, so it is not written again). The job ends so the pool
                    // replaces the connection, and what is still waiting goes on in a new flush.
                    resumeAfterLostConnection()
                    throw ConnectionLost(underlying: lost)
                }
            }
        } failure: { [self] error in
            guard !(error is ConnectionLost) else { return }
            // No connection: fail what is waiting now; later sends start a new flush.
            let abandoned = state.withLock { state in
                state.flushing -= 1
                let pending = state.pending
                state.pending = []
                return pending
            }
            abandoned.forEach { $0.continuation.resume(throwing: error) }
        }
    }

    /// A flush ended by a lost connection; its slot passes to a new flush if sends are waiting.
    private struct ConnectionLost: Error {
        var underlying: PostgresError
    }

    private func resumeAfterLostConnection() {
        let again = state.withLock { state in
            state.flushing -= 1
            guard !state.pending.isEmpty, state.flushing < limits.concurrentFlushes else { return false }
            state.flushing += 1
            return true
        }
        if again { flush() }
    }

    /// Takes the next batch (unique ids, within the limits), or ends this flush when none is left.
    private func nextBatch() -> [Item]? {
        state.withLock { state in
            guard !state.pending.isEmpty else {
                state.flushing -= 1
                return nil
            }
            var batch: [Item] = []
            var ids = Set<String>()
            var recipients = 0
            var remaining: [Item] = []
            for item in state.pending {
                let fits = batch.isEmpty
                    || (batch.count < limits.notifications && recipients + item.recipients.count <= limits.recipients)
                // A repeated id waits for the next batch, where it meets the committed first one.
                if fits && ids.insert(item.notification.id).inserted {
                    batch.append(item)
                    recipients += item.recipients.count
                } else {
                    remaining.append(item)
                }
            }
            state.pending = remaining
            return batch
        }
    }

    /// Writes and answers `batch`; returns the error when the connection was lost doing so.
    private func write(_ batch: [Item], on connection: PostgresConnection) -> PostgresError? {
        do {
            let (outcomes, written, analyzed) = try insert(batch, on: connection)
            for (item, outcome) in zip(batch, outcomes) {
                item.continuation.resume(returning: outcome)
            }
            statistics.committed(written, analyzed: analyzed)
            return nil
        } catch let error as PostgresError where batch.count > 1 && !error.isConnectionFailure && connection.isUsable {
            for (index, item) in batch.enumerated() {
                if let lost = write([item], on: connection) {
                    batch[(index + 1)...].forEach { $0.continuation.resume(throwing: lost) }
                    return lost
                }
            }
            return nil
        } catch let error as PostgresError {
            batch.forEach { $0.continuation.resume(throwing: error) }
            return error.isConnectionFailure || !connection.isUsable ? error : nil
        } catch {
            batch.forEach { $0.continuation.resume(throwing: error) }
            return nil
        }
    }

    /// One transaction stores the batch. Ids are locked first (an advisory lock per id, in one
    /// order, so concurrent flushes never deadlock) and then looked up in every period, so a
    /// repeated id is found however old it is and two sends of one id never both store. One
    /// statement inserts the new notifications and their deliveries; a notification with more
    /// recipients than one statement carries (``Limits/recipientsPerStatement``) continues in
    /// further statements of the same transaction, each a bounded piece of work, the whole send
    /// under its own time limit. The ids that already existed get their first send's states.
    /// Also returns the delivery rows written per notification key and the days analyzed within
    /// the transaction (for ``FreshStatistics``).
    private func insert(_ batch: [Item], on connection: PostgresConnection) throws -> ([SendOutcome], [Int64: Int], [Int64: Double]) {
        if fitsOneTrip(batch) { return try insertInOneTrip(batch, on: connection) }
        var analyzedDays: [Int64] = []
        do {
            return try insertTransaction(batch, on: connection) { analyzedDays = $0 }
        } catch {
            statistics.abandoned(analyzedDays)
            throw error
        }
    }

    /// True when the batch needs no statement decided by what the insert answers: every send
    /// fits one statement and all of them together are too few rows for the day's statistics
    /// to be refreshed within the send. Then lock, insert and commit travel together (the bank's
    /// one-time codes and ordinary sends; a blast takes ``insertTransaction``).
    private func fitsOneTrip(_ batch: [Item]) -> Bool {
        let rows = batch.reduce(0) { $0 + $1.recipients.count }
        return batch.allSatisfy { $0.recipients.count <= limits.recipientsPerStatement }
            && !statistics.mayAnalyzeWithin(rows: rows)
    }

    /// ``insertTransaction`` in one round trip: the ids' locks and the insert are sent with
    /// BEGIN and COMMIT at once (the insert's statement starts once the locks are held, so it
    /// sees any send of the same id that committed first). The ids that already existed are read
    /// after the commit: their first send is committed by then.
    private func insertInOneTrip(_ batch: [Item], on connection: PostgresConnection) throws -> ([SendOutcome], [Int64: Int], [Int64: Double]) {
        let moment = StoredMoment(now())
        let answers = try connection.transactionInOneTrip([
            (Self.lockStatement, [PostgresArray.encode(batch.map(\.notification.id))]),
            (Self.insertStatement(userColumn: identifiers.userColumn), parameters(batch.map { ($0.notification, $0.recipients) }, at: moment)),
        ])
        let (keys, queued) = try Self.stored(answers[1])
        return (try outcomes(batch, keys: keys, queued: queued, storedAt: moment, on: connection), written(batch, keys: keys), [:])
    }

    private func insertTransaction(_ batch: [Item], on connection: PostgresConnection,
                                   analyzing: ([Int64]) -> Void) throws -> ([SendOutcome], [Int64: Int], [Int64: Double]) {
        try connection.transaction { connection in
            try connection.query(sql: Self.lockStatement, [PostgresArray.encode(batch.map(\.notification.id))])
            let started = ContinuousClock.now
            let moment = StoredMoment(now())
            let rows = try connection.query(sql: Self.insertStatement(userColumn: identifiers.userColumn),
                                            parameters(batch.map { ($0.notification, $0.recipients) }, at: moment))
            var (keys, queued) = try Self.stored(rows)
            for item in batch where item.recipients.count > limits.recipientsPerStatement {
                guard let key = keys[item.notification.id] else { continue }
                try insertRemaining(item, key: key, started: started, queued: &queued, connection)
            }
            let written = written(batch, keys: keys)
            // A send big enough to change the day's plans is analyzed before it commits, so
            // no claim sees its rows with the old statistics.
            let analyzed = try statistics.analyzeWithin(written, on: connection)
            analyzing(Array(analyzed.keys))
            return (try outcomes(batch, keys: keys, queued: queued, storedAt: moment, on: connection), written, analyzed)
        }
    }

    /// Locks the ids of a batch, one advisory lock per id in one order (no deadlock between flushes).
    private static let lockStatement = """
        SELECT count(pg_advisory_xact_lock(\(idLockSpace), h))
        FROM (SELECT DISTINCT hashtext(id) AS h FROM unnest($1::text[]) AS id ORDER BY h) AS ids
        """

    /// The insert's answer: each stored notification's key, and its QUEUED positions (a stored
    /// notification's recipients are QUEUED or INVALID_SUBSCRIPTION; only the QUEUED positions
    /// come back, a big send has millions of the other kind).
    private static func stored(_ rows: PostgresRows) throws -> (keys: [String: Int64], queued: [String: [Int]]) {
        var queued: [String: [Int]] = [:]
        var keys: [String: Int64] = [:]
        for row in rows.named {
            // One row per notification stored with no recipient queued (position NULL), else one per queued position.
            let id: String = try row.decode("id")
            keys[id] = try row.decode("key", as: Int64.self)
            if let position = try row.decodeIfPresent("position", as: Int.self) { queued[id, default: []].append(position) }
        }
        return (keys, queued)
    }

    /// The delivery rows written per notification key.
    private func written(_ batch: [Item], keys: [String: Int64]) -> [Int64: Int] {
        var written: [Int64: Int] = [:]
        for item in batch {
            if let key = keys[item.notification.id] { written[key] = item.recipients.count }
        }
        return written
    }

    /// Each send's answer: its recipients' states, or, for an id stored before, that send's.
    private func outcomes(_ batch: [Item], keys: [String: Int64], queued: [String: [Int]], storedAt moment: StoredMoment,
                          on connection: PostgresConnection) throws -> [SendOutcome] {
        try batch.map { item in
            guard keys[item.notification.id] != nil else {
                let existing = try NotificationStore.key(of: item.notification.id, connection)
                return .duplicate(try existing.map { try NotificationStore.states(of: $0, connection) } ?? [])
            }
            var states = item.recipients.map { RecipientState(user: $0, state: .invalidSubscription) }
            for position in queued[item.notification.id] ?? [] where states.indices.contains(position - 1) {
                states[position - 1].state = .queued
            }
            return .stored(states, expiresAt: moment.deadline(timeoutSeconds: item.notification.timeoutSeconds))
        }
    }

    /// The advisory lock space of notification ids (the second key is the id's hash).
    static let idLockSpace = 741_401_320

    /// The deliveries of a big notification past its first statement, one statement per piece.
    private func insertRemaining(_ item: Item, key: Int64, started: ContinuousClock.Instant,
                                 queued: inout [String: [Int]], _ connection: PostgresConnection) throws {
        let chunk = limits.recipientsPerStatement
        var first = chunk
        while first < item.recipients.count {
            if ContinuousClock.now - started > limits.bigSendTimeLimit {
                throw PostgresError(.other("send too slow"),
                    "storing \(item.recipients.count) recipients took longer than \(limits.bigSendTimeLimit); nothing was stored")
            }
            let piece = first..<min(first + chunk, item.recipients.count)
            let columns = recipientColumns([(index: 1, recipients: item.recipients, range: piece)])
            let rows = try connection.query(sql: """
                WITH stored AS (
                    INSERT INTO deliveries (notification_key, position, user_id, user_folded, state, priority,
                        expires_at, updated_at, next_attempt_at, reported_early_at)
                    SELECT n.key, r.position, r.user_id, r.user_folded, s.state, COALESCE(n.priority, 0),
                        n.expires_at, n.created_at, CASE WHEN s.state = 'QUEUED' THEN n.created_at END,
                        CASE WHEN \(ReachedNobody.condition(state: "s.state", expiresAt: "n.expires_at")) THEN now() END
                    FROM notifications n
                    CROSS JOIN unnest($2::text[], $3::text[], $4::text[], $5::integer[])
                        AS r(user_id, user_folded, lookup, position)
                    -- A big send's later pieces: the planner may read the devices once into a
                    -- hash for the piece's 50,000 recipients (cheaper here than a probe each).
                    CROSS JOIN LATERAL (SELECT CASE WHEN EXISTS (SELECT 1 FROM devices d
                            WHERE d.\(identifiers.userColumn) = r.lookup AND d.state = 'SUBSCRIBED')
                        THEN 'QUEUED' ELSE 'INVALID_SUBSCRIPTION' END AS state) s
                    WHERE n.key = $1::bigint
                    RETURNING notification_key, position, state, user_id, reported_early_at IS NOT NULL AS reached_nobody
                ), \(ReachedNobody.reports(from: "stored"))
                SELECT position FROM stored WHERE state = 'QUEUED'
                """, [String(key), columns.users, columns.folded, columns.lookup, columns.positions])
            queued[item.notification.id, default: []] += try rows.decoded { try $0.decode("position", as: Int.self) }
            first = piece.upperBound
        }
    }

    /// Inserts the notifications of a batch that do not exist yet and their first
    /// ``Limits/recipientsPerStatement`` deliveries; returns (id, position, state, key) per
    /// QUEUED delivery, and one row with only the id and key for a notification without any.
    static func insertStatement(userColumn: String) -> String {
        """
        WITH input AS (
            SELECT * FROM unnest($1::text[], $2::integer[], $3::integer[], $4::boolean[], $5::integer[],
                $6::integer[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
                $12::text[], $13::text[], $20::boolean[], $21::text[]) WITH ORDINALITY
            AS i(id, recipient_count, timeout_seconds, perishable, priority, badge, sound, push_text,
                 push_type, push_detail_keys, push_detail_values, detail_keys, detail_values, confidential, interruption_level, index)
        ),
        inserted AS (
            INSERT INTO notifications (key, id, recipient_count, timeout_seconds, perishable, priority,
                push_badge, push_sound, push_text, push_type, push_detail_keys, push_detail_values,
                detail_keys, detail_values, confidential, interruption_level, created_at, expires_at)
            SELECT pigeon_notification_key($14::timestamptz), id, recipient_count, timeout_seconds,
                perishable, priority, badge, sound, push_text, push_type, push_detail_keys::text[],
                push_detail_values::text[], detail_keys::text[], detail_values::text[], confidential, interruption_level, $14::timestamptz,
                $14::timestamptz + make_interval(secs => timeout_seconds)
            FROM input i
            -- A scalar subquery per notification (an index probe per partition, stopping at the
            -- first match): a NOT EXISTS was planned, while the day's partition was not yet
            -- analyzed, as a hash over every stored notification, built again for each send.
            WHERE (SELECT true FROM notifications n WHERE n.id = i.id LIMIT 1) IS NULL
            RETURNING key, id, created_at, expires_at, priority
        ),
        stored AS (
            INSERT INTO deliveries (notification_key, position, user_id, user_folded, state, priority,
                expires_at, updated_at, next_attempt_at, reported_early_at)
            SELECT n.key, r.position, r.user_id, r.user_folded, s.state, COALESCE(n.priority, 0),
                n.expires_at, n.created_at, CASE WHEN s.state = 'QUEUED' THEN n.created_at END,
                CASE WHEN \(ReachedNobody.condition(state: "s.state", expiresAt: "n.expires_at")) THEN now() END
            FROM inserted n
            JOIN input i ON i.id = n.id
            JOIN unnest($15::integer[], $16::text[], $17::text[], $18::text[], $19::integer[])
                AS r(notification_index, user_id, user_folded, lookup, position)
              ON r.notification_index = i.index
            -- A scalar subquery per recipient (an index probe): an EXISTS here may be planned as a
            -- hashed subplan that reads every device for each send (generic plans estimate ten
            -- recipients, so on a table of 10,000 devices the hash looked cheaper).
            CROSS JOIN LATERAL (SELECT COALESCE((SELECT 'QUEUED' FROM devices d
                    WHERE d.\(userColumn) = r.lookup AND d.state = 'SUBSCRIBED' LIMIT 1),
                'INVALID_SUBSCRIPTION') AS state) s
            RETURNING notification_key, position, state, user_id, reported_early_at IS NOT NULL AS reached_nobody
        ), \(ReachedNobody.reports(from: "stored", notifications: "inserted"))
        SELECT n.id, s.position, s.state, n.key FROM inserted n
        LEFT JOIN stored s ON s.notification_key = n.key AND s.state = 'QUEUED'
        """
    }

    /// The parameters of ``insertStatement(userColumn:)`` for `sends` (each with its recipients)
    /// stored at `moment`.
    func parameters(_ sends: [(notification: PushNotification, recipients: [String])], at moment: StoredMoment) -> [String?] {
        let notifications = sends.map(\.notification)
        func column(_ value: (PushNotification) -> String?) -> String? {
            PostgresArray.encode(notifications.map(value))
        }
        let recipients = recipientColumns(sends.enumerated().map { index, item in
            (index + 1, item.recipients, 0..<min(item.recipients.count, limits.recipientsPerStatement))
        })
        return [
            column { $0.id },
            PostgresArray.encode(sends.map { String($0.recipients.count) }),
            column { String($0.timeoutSeconds) },
            column { $0.perishable.map { $0 ? "true" : "false" } },
            column { $0.priority.map(String.init) },
            column { $0.pushContent.badge.map(String.init) },
            column { $0.pushContent.sound },
            column { $0.pushContent.text },
            column { $0.pushContent.type.rawValue },
            column { PostgresArray.encode($0.pushContent.details.map(\.key)) },
            column { PostgresArray.encode($0.pushContent.details.map(\.value)) },
            column { $0.details.map { PostgresArray.encode($0.map(\.key)) } },
            column { $0.details.map { PostgresArray.encode($0.map(\.value)) } },
            moment.text,
            recipients.notificationIndex,
            recipients.users,
            recipients.folded,
            recipients.lookup,
            recipients.positions,
            column { $0.confidential.map { $0 ? "true" : "false" } },
            column { $0.interruptionLevel?.rawValue },
        ]
    }

    /// The recipient arrays of a statement: for each notification (by its 1-based index in the
    /// statement), the recipients in `range`, positions counted from 1 in the order sent.
    private func recipientColumns(_ notifications: [(index: Int, recipients: [String], range: Range<Int>)])
        -> (notificationIndex: String?, users: String?, folded: String?, lookup: String?, positions: String?) {
        var indexes: [String] = [], users: [String] = [], folded: [String] = []
        var lookup: [String] = [], positions: [String] = []
        for notification in notifications {
            for position in notification.range {
                let user = notification.recipients[position]
                let lower = user.lowercased()
                indexes.append(String(notification.index))
                users.append(user)
                folded.append(lower)
                lookup.append(identifiers.caseInsensitive ? lower : user)
                positions.append(String(position + 1))
            }
        }
        return (PostgresArray.encode(indexes), PostgresArray.encode(users), PostgresArray.encode(folded),
                PostgresArray.encode(lookup), PostgresArray.encode(positions))
    }
}
