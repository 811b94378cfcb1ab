import Foundation
import PigeonDomain
@testable import PigeonServer
import PigeonStore
import PigeonTestSupport
import Testing

@Suite("A send of five million recipients (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"), .enabled(if: TestTier.runsSystem, "system tier (five million recipients): PIGEON_TEST_TIER"))
struct BigSendTests {
    static let recipients = 5_000_000

    @Test("accepted in one request within maxRequestBytes: every recipient stored in order and answered with its state")
    func fiveMillionRecipients() async throws {
        let (pool, url, drop) = try await TestDatabase.isolatedDatabaseWithURL()
        let subscribed = [1, Self.recipients / 2, Self.recipients]
        let subscriptions = SubscriptionStore(pool: pool, identifiers: UserIdentifiers(caseInsensitive: false))
        for position in subscribed {
            try await subscriptions.subscribe(bankClientId: "bank", userId: "big-\(position)", deviceId: "phone", platform: .android, pushToken: "fcm-\(position)")
        }
        let harness = try await GatewayHarness {
            $0.database.url = url
            $0.http.maxRequestBytes = 256 << 20
        }
        let body = Self.sendNotification(id: "five-million", users: Self.recipients)
        #expect(body.count > 150 << 20, "the request is \(body.count >> 20) MiB")

        let reply = try await harness.soapRaw(body, timeout: 1_800)
        #expect(reply.status == 200)
        let answer = Self.deliveryStatus(reply.body)
        #expect(answer.status == "OK")
        #expect(answer.users == Self.recipients)
        // The states of the subscribed users, at their places in the order sent.
        #expect(answer.queued.map(\.position) == subscribed)
        #expect(answer.queued.map(\.user) == subscribed.map { "big-\($0)" })

        let stored = try await pool.withConnection {
            try $0.query(sql: "SELECT count(*) || ' ' || min(position) || ' ' || max(position) || ' ' || count(*) FILTER (WHERE state = 'QUEUED') FROM deliveries").scalar
        }
        #expect(stored == "\(Self.recipients) 1 \(Self.recipients) 3")
        let misplaced = try await pool.withConnection {
            try $0.query(sql: "SELECT count(*) FROM deliveries WHERE user_id <> 'big-' || position").scalar
        }
        #expect(misplaced == "0", "every recipient is stored at its place in the order sent")
        let counted = try await pool.withConnection {
            try $0.query(sql: "SELECT recipient_count FROM notifications WHERE id = 'five-million'").scalar
        }
        #expect(counted == String(Self.recipients))
        await drop()
    }

    /// A SOAP 1.1 sendNotification to `big-1` … `big-<users>`, written straight into bytes.
    static func sendNotification(id: String, users: Int) -> Data {
        var text = ""
        text.reserveCapacity(users * 36 + 1_024)
        text += "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:inb=\"http://inbound.sbi.pigeon.idamobile.com/\">"
        text += "<soapenv:Body><inb:sendNotification><notification><id>\(id)</id>"
        text += "<pushContent><text>Hello</text><type>UNIVERSAL</type></pushContent>"
        for position in 1...users {
            text += "<recipients>big-"
            text += String(position)
            text += "</recipients>"
        }
        text += "<timeout>3600</timeout></notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>"
        return Data(text.utf8)
    }

    /// What a sendNotification answer says, read with a byte scan (it is hundreds of megabytes).
    struct Answer {
        var status = ""
        var users = 0
        /// Positions (from 1) and users of the entries whose state is QUEUED.
        var queued: [(position: Int, user: String)] = []
    }

    static func deliveryStatus(_ body: Data) -> Answer {
        var answer = Answer()
        body.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            guard let base = bytes.baseAddress else { return }
            let (entryTag, queuedTag) = (Array("<entry><key>".utf8), Array("<value>QUEUED<".utf8))
            var lastKey = ""
            var position = 0
            while let found = memchr(base + position, Int32(UInt8(ascii: "<")), bytes.count - position) {
                position = base.distance(to: UnsafeRawPointer(found))
                let rest = bytes.count - position
                if rest >= entryTag.count, memcmp(found, entryTag, entryTag.count) == 0 {
                    answer.users += 1
                    let keyStart = position + entryTag.count
                    let keyEnd = keyStart + (memchr(base + keyStart, Int32(UInt8(ascii: "<")), bytes.count - keyStart).map { base.distance(to: UnsafeRawPointer($0)) - keyStart } ?? 0)
                    lastKey = String(decoding: bytes[keyStart..<keyEnd], as: UTF8.self)
                    position = keyEnd
                    continue
                }
                if rest >= queuedTag.count, memcmp(found, queuedTag, queuedTag.count) == 0 {
                    answer.queued.append((answer.users, lastKey))
                } else if answer.status.isEmpty, rest > 8, memcmp(found, "<status>", 8) == 0,
                          let close = bytes[(position + 8)...].firstIndex(of: UInt8(ascii: "<")) {
                    answer.status = String(decoding: bytes[(position + 8)..<close], as: UTF8.self)
                }
                position += 1
                if position >= bytes.count { break }
            }
        }
        return answer
    }
}
