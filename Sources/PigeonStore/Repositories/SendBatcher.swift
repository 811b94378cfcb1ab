import Foundation
import PigeonCore
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

    init(pool: PostgresPool, identifiers: UserIdentifiers, limits: Limits = Limits()) {
        self.pool = pool
        self.identifiers = identifiers
        self.limits = limits
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
            let outcomes = try insert(batch, on: connection)
            for (item, outcome) in zip(batch, outcomes) {
                item.continuation.resume(returning: outcome)
            }
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

    /// One statement inserts every notification of the batch and all their deliveries; then the
    /// ids that already existed get their first send's states.
    private func insert(_ batch: [Item], on connection: PostgresConnection) throws -> [SendOutcome] {
        let userColumn = identifiers.userColumn
        let rows = try connection.query("""
            WITH input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::boolean[], $5::integer[],
                    $6::integer[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
                    $12::text[], $13::text[]) WITH ORDINALITY
                AS i(id, recipients, timeout_seconds, perishable, priority, badge, sound, push_text,
                     push_type, push_detail_keys, push_detail_values, detail_keys, detail_values, index)
            ),
            inserted AS (
                INSERT INTO notifications (id, recipients, timeout_seconds, perishable, priority,
                    push_badge, push_sound, push_text, push_type, push_detail_keys, push_detail_values,
                    detail_keys, detail_values, created_at, expires_at)
                SELECT id, recipients::text[], timeout_seconds, perishable, priority, badge, sound,
                    push_text, push_type, push_detail_keys::text[], push_detail_values::text[],
                    detail_keys::text[], detail_values::text[], $14::timestamptz,
                    $14::timestamptz + make_interval(secs => timeout_seconds)
                FROM input
                ON CONFLICT (id) DO NOTHING
                RETURNING id, created_at, expires_at, priority
            )
            INSERT INTO deliveries (notification_id, position, user_id, user_folded, state, priority,
                expires_at, created_at, updated_at)
            SELECT n.id, r.position, r.user_id, r.user_folded,
                CASE WHEN EXISTS (SELECT 1 FROM devices d
                                  WHERE d.\(userColumn) = r.lookup AND d.state = 'SUBSCRIBED')
                     THEN 'QUEUED' ELSE 'INVALID_SUBSCRIPTION' END,
                COALESCE(n.priority, 0), n.expires_at, n.created_at, n.created_at
            FROM inserted n
            JOIN input i ON i.id = n.id
            JOIN unnest($15::integer[], $16::text[], $17::text[], $18::text[], $19::integer[])
                AS r(notification_index, user_id, user_folded, lookup, position)
              ON r.notification_index = i.index
            RETURNING notification_id, position, state
            """, parameters(batch))

        var states: [String: [Int: DeliveryState]] = [:]
        for row in rows.rows {
            guard let id = row.text(0), let position = row.integer(1),
                  let state = row.text(2).flatMap(DeliveryState.init(rawValue:)) else { continue }
            states[id, default: [:]][position] = state
        }
        let duplicates = batch.map(\.notification.id).filter { states[$0] == nil }
        let existing = duplicates.isEmpty ? [:] : try NotificationStore.states(of: duplicates, connection)
        return batch.map { item in
            guard let stored = states[item.notification.id] else {
                return .duplicate(existing[item.notification.id] ?? [])
            }
            return .stored(item.recipients.enumerated().map { index, user in
                RecipientState(user: user, state: stored[index + 1] ?? .invalidSubscription)
            })
        }
    }

    private func parameters(_ batch: [Item]) -> [String?] {
        let notifications = batch.map(\.notification)
        func column(_ value: (PushNotification) -> String?) -> String? {
            PostgresArray.encode(notifications.map(value))
        }
        var recipientIndex: [String] = [], users: [String] = [], folded: [String] = []
        var lookup: [String] = [], positions: [String] = []
        for (index, item) in batch.enumerated() {
            for (position, user) in item.recipients.enumerated() {
                let lower = user.lowercased()
                recipientIndex.append(String(index + 1))
                users.append(user)
                folded.append(lower)
                lookup.append(identifiers.caseInsensitive ? lower : user)
                positions.append(String(position + 1))
            }
        }
        return [
            column { $0.id },
            column { PostgresArray.encode($0.recipients) },
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
            NotificationStore.timestamp(Date()),
            PostgresArray.encode(recipientIndex),
            PostgresArray.encode(users),
            PostgresArray.encode(folded),
            PostgresArray.encode(lookup),
            PostgresArray.encode(positions),
        ]
    }
}
