import Foundation
import PigeonDomain
import PigeonCrypto
import Synchronization

/// Operators signed in to the console (CONTRACT §10): a random session id in an `HttpOnly`,
/// `SameSite=Strict` cookie, and with it a random token every form and JSON action must carry back
/// (CSRF). Kept in a ``ConsoleSessionStore`` — PostgreSQL in the gateway, so every gateway of a
/// fleet knows every session and a restart signs nobody out — under the id's digest only. A session
/// ends after `idleSeconds` without a request or `absoluteSeconds` after sign-in; at most
/// `capacity` live at once (the oldest goes first).
package final class ConsoleSessions: Sendable {
    /// A live session: who it is for, and the token its forms carry.
    package struct Session: Sendable, Equatable {
        package var person: ConsoleOperator
        package var csrfToken: String
        package var username: String { person.name }
    }

    package let idleSeconds: Double
    package let absoluteSeconds: Double
    package let capacity: Int
    private let store: any ConsoleSessionStore
    private let clock: @Sendable () -> Date

    package init(store: any ConsoleSessionStore, idleSeconds: Double = 1_800, absoluteSeconds: Double = 8 * 3_600, capacity: Int = 1_000,
                 clock: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.idleSeconds = idleSeconds
        self.absoluteSeconds = absoluteSeconds
        self.capacity = capacity
        self.clock = clock
    }

    /// A new session for `person`: its id (the cookie) and the session.
    package func start(_ person: ConsoleOperator) async throws -> (id: String, session: Session) {
        let id = SecretToken.generate()
        let now = clock()
        let session = Session(person: person, csrfToken: SecretToken.generate())
        try await store.insert(
            StoredConsoleSession(digest: SecretToken.digest(id), operatorName: person.name, role: person.role.rawValue,
                                 csrfToken: session.csrfToken, startedAt: now, lastSeenAt: now),
            capacity: capacity, idleBefore: now.addingTimeInterval(-idleSeconds), startedBefore: now.addingTimeInterval(-absoluteSeconds))
        return (id, session)
    }

    /// The live session of a cookie's id, its idle time reset; nil when unknown or ended.
    package func session(id: String) async throws -> Session? {
        guard id.utf8.count <= 64 else { return nil }
        let now = clock()
        guard let stored = try await store.touch(digest: SecretToken.digest(id), now: now, idleBefore: now.addingTimeInterval(-idleSeconds),
                                                 startedBefore: now.addingTimeInterval(-absoluteSeconds)),
              let role = ConsoleRole(rawValue: stored.role) else { return nil }
        return Session(person: ConsoleOperator(name: stored.operatorName, role: role), csrfToken: stored.csrfToken)
    }

    package func end(id: String) async throws {
        try await store.delete(digest: SecretToken.digest(id))
    }
}

/// Console sessions in this process's memory: the unit tier's store, and the shape the
/// PostgreSQL one keeps (the same idle, absolute and capacity rules).
package final class InMemoryConsoleSessionStore: ConsoleSessionStore {
    private let sessions = Mutex<[Data: StoredConsoleSession]>([:])

    package init() {}

    package var count: Int { sessions.withLock { $0.count } }

    package func insert(_ session: StoredConsoleSession, capacity: Int, idleBefore: Date, startedBefore: Date) async throws {
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.lastSeenAt >= idleBefore && $0.value.startedAt >= startedBefore }
            sessions[session.digest] = session
            while sessions.count > max(1, capacity), let oldest = sessions.min(by: { $0.value.startedAt < $1.value.startedAt }) {
                sessions[oldest.key] = nil
            }
        }
    }

    package func touch(digest: Data, now: Date, idleBefore: Date, startedBefore: Date) async throws -> StoredConsoleSession? {
        sessions.withLock { sessions in
            guard var session = sessions[digest] else { return nil }
            guard session.lastSeenAt >= idleBefore, session.startedAt >= startedBefore else {
                sessions[digest] = nil
                return nil
            }
            session.lastSeenAt = max(session.lastSeenAt, now)
            sessions[digest] = session
            return session
        }
    }

    package func delete(digest: Data) async throws {
        _ = sessions.withLock { $0.removeValue(forKey: digest) }
    }
}

/// The audit trail in this process's memory, for the unit tier.
package final class InMemoryAuditTrail: AuditTrail {
    private let entries = Mutex<[AuditEntry]>([])
    private let clock: @Sendable () -> Date

    package init(clock: @escaping @Sendable () -> Date = { Date() }) {
        self.clock = clock
    }

    package var all: [AuditEntry] { entries.withLock { $0 } }

    package func record(_ entry: AuditEntry) async throws {
        var entry = entry
        entry.at = clock()
        entries.withLock { $0.append(entry) }
    }

    package func entries(since: Date?, offset: Int, limit: Int) async throws -> [AuditEntry] {
        let matching = entries.withLock { $0 }.filter { since == nil || $0.at >= since! }.reversed()
        return Array(matching.dropFirst(max(0, offset)).prefix(max(1, min(limit, 500))))
    }
}
