import Foundation
import PigeonCore
import PigeonDomain
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonDelivery

/// Where the engine reads a claimed delivery's content, held to both implementations: the
/// engine tests' `FakeNotifications` and PostgreSQL's `NotificationStore` (a fresh database each
/// case).
@Suite("Notification source contract: the engine's fake and PostgreSQL answer the same content", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct NotificationSourceContractTests {
    typealias Kind = StoreKind

    /// A source holding `notifications`, their storage keys in the same order, and how to close it.
    struct Setting {
        var source: any NotificationSource
        var keys: [Int64]
        var finish: @Sendable () async -> Void
    }

    static func make(_ kind: Kind, _ notifications: [PushNotification]) async throws -> Setting {
        switch kind {
        case .memory:
            let keys = notifications.indices.map { Int64($0 + 1) }
            return Setting(source: FakeNotifications(notifications: Dictionary(uniqueKeysWithValues: zip(keys, notifications))),
                           keys: keys, finish: {})
        case .postgresql:
            let (pool, drop) = try await TestDatabase.isolatedDatabase()
            let store = NotificationStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
            var keys: [Int64] = []
            for notification in notifications {
                _ = try await store.send(notification)
                let key = try await pool.withConnection { connection in
                    try connection.query("SELECT key FROM notifications WHERE id = \(notification.id)").decodedFirst { try $0.decode("key", as: Int64.self) }
                }
                keys.append(try #require(key))
            }
            return Setting(source: PostgresNotifications(store: store), keys: keys, finish: drop)
        }
    }

    /// A code with every optional part set, and a plain message with none.
    static let code = PushNotification(
        id: "code-1", recipients: ["alice", "bob"], timeoutSeconds: 120,
        pushContent: PushContent(badge: 3, sound: "chime.caf", text: "Your code is 123456", type: .universal,
                                 details: [KeyValue("target", "payments"), KeyValue("amount", "10.00")]),
        details: [KeyValue("operation", "pay-77")], perishable: true, priority: 10, confidential: false,
        interruptionLevel: .timeSensitive)
    static let plain = PushNotification(id: "news-1", recipients: ["carol"], timeoutSeconds: 3600,
                                        pushContent: PushContent(text: "Rates change on Monday", type: .message))

    @Test("a stored notification comes back by its key as sent, content only: every field but the recipient list, which the engine never needs",
          arguments: Kind.available)
    func contentByKey(kind: Kind) async throws {
        let setting = try await Self.make(kind, [Self.code, Self.plain])
        for (key, sent) in zip(setting.keys, [Self.code, Self.plain]) {
            var expected = sent
            expected.recipients = []
            #expect(try await setting.source.notification(key: key) == expected)
        }
        await setting.finish()
    }

    @Test("an unknown key is nil, not an error; a batch look-up answers the keys it found and leaves the others out",
          arguments: Kind.available)
    func missingKeys(kind: Kind) async throws {
        let setting = try await Self.make(kind, [Self.code, Self.plain])
        let unknown = (setting.keys.max() ?? 0) + 1000
        #expect(try await setting.source.notification(key: unknown) == nil)
        let found = try await setting.source.notifications(keys: setting.keys + [unknown])
        #expect(Set(found.keys) == Set(setting.keys))
        #expect(found[setting.keys[1]]?.id == "news-1")
        #expect(found.values.allSatisfy { $0.recipients.isEmpty })
        #expect(try await setting.source.notifications(keys: []).isEmpty)
        await setting.finish()
    }
}

/// PostgreSQL's store as the engine's seam (the gateway declares the conformance in PigeonServer,
/// which this target does not import).
private struct PostgresNotifications: NotificationSource {
    let store: NotificationStore
    func notification(key: Int64) async throws -> PushNotification? { try await store.notification(key: key) }
    func notifications(keys: [Int64]) async throws -> [Int64: PushNotification] { try await store.notifications(keys: keys) }
}
