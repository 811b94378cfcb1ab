import Foundation
import PigeonCrypto
import Synchronization

/// Operators signed in to the console, in this process's memory: a random session id in an
/// `HttpOnly`, `SameSite=Strict` cookie, and with it a random token every form must carry back
/// (CSRF). A session ends after `idleSeconds` without a request or `absoluteSeconds` after sign-in;
/// at most `capacity` live at once (the oldest goes first). A gateway restart signs everyone out.
package final class ConsoleSessions: Sendable {
    package struct Session: Sendable {
        var username: String
        var csrfToken: String
        var started: Double
        var lastSeen: Double
    }

    package let idleSeconds: Double
    package let absoluteSeconds: Double
    package let capacity: Int
    private let sessions = Mutex<[Data: Session]>([:])
    private let clock: @Sendable () -> Double

    package init(idleSeconds: Double = 1_800, absoluteSeconds: Double = 8 * 3_600, capacity: Int = 1_000,
         clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.idleSeconds = idleSeconds
        self.absoluteSeconds = absoluteSeconds
        self.capacity = capacity
        self.clock = clock
    }

    /// A new session for `username`: its id (the cookie) and CSRF token.
    package func start(username: String) -> (id: String, session: Session) {
        let id = SecretToken.generate()
        let now = clock()
        let session = Session(username: username, csrfToken: SecretToken.generate(), started: now, lastSeen: now)
        sessions.withLock { sessions in
            if sessions.count >= capacity {
                sessions = sessions.filter { live($0.value, now: now) }
                if sessions.count >= capacity, let oldest = sessions.min(by: { $0.value.started < $1.value.started }) {
                    sessions[oldest.key] = nil
                }
            }
            sessions[SecretToken.digest(id)] = session
        }
        return (id, session)
    }

    /// The live session of a cookie's id, its idle time reset; nil when unknown or ended.
    package func session(id: String) -> Session? {
        let key = SecretToken.digest(id)
        let now = clock()
        return sessions.withLock { sessions in
            guard var session = sessions[key] else { return nil }
            guard live(session, now: now) else {
                sessions[key] = nil
                return nil
            }
            session.lastSeen = now
            sessions[key] = session
            return session
        }
    }

    package func end(id: String) {
        _ = sessions.withLock { $0.removeValue(forKey: SecretToken.digest(id)) }
    }

    private func live(_ session: Session, now: Double) -> Bool {
        now - session.lastSeen < idleSeconds && now - session.started < absoluteSeconds
    }
}
