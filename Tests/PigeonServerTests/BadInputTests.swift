import Foundation
import PigeonCore
import PigeonStore
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// Hostile and broken requests: each is answered with a SOAP Fault or a 4xx with a clear
/// message, nothing is stored, and the server keeps answering.
@Suite("Bad input over HTTP", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct BadInputTests {
    @Test("a 50 MB body gets 413, declared or chunked, and the server keeps answering")
    func hugeBody() async throws {
        try await GatewayHarness.with { harness in
            // curl, like real SOAP stacks, announces large bodies with "Expect: 100-continue" and
            // reads the early 413; the server never buffers the 50 MB.
            let declared = try await Self.curl(["-H", "Content-Type: text/xml", "--data-binary", "@-", harness.baseURL + GatewayHarness.soapPath],
                                               stdin: Data(repeating: UInt8(ascii: "A"), count: 50 * 1024 * 1024))
            #expect(declared.hasPrefix("413"))
            #expect(declared.contains("maxRequestBytes"))
            // A chunked body cannot be answered in its middle: once it outgrows the limit the
            // connection is closed (curl sees the interim 100 or nothing, never a final answer).
            let chunked = try await Self.curl(["-H", "Transfer-Encoding: chunked", "-H", "Content-Type: text/xml", "--data-binary", "@-", harness.baseURL + GatewayHarness.soapPath], stdin: Data(repeating: 0x41, count: 5 * 1024 * 1024))
            #expect(chunked.hasPrefix("413") || chunked.hasPrefix("100") || chunked.hasPrefix("000"), "\(chunked.prefix(200))")
            #expect(try await harness.request("GET", "/health").status == 200)
        }
    }

    @Test("10,000 recipients with a 10 MB user id: 413 by default, a named fault when the limit allows the body")
    func hugeRecipient() async throws {
        let id = TestDatabase.unique("bad-huge-recipient")
        var recipients = (0..<9_999).map { "user-\($0)" }
        recipients.append(String(repeating: "x", count: 10 * 1024 * 1024))
        let body = Data(GatewayHarness.envelope(GatewayHarness.sendNotification(id: id, recipients: recipients)).utf8)

        let strict = try await GatewayHarness()
        #expect(try await strict.soapRaw(body).status == 413)

        let generous = try await GatewayHarness { $0.http.maxRequestBytes = 64 << 20 }
        let reply = try await generous.soapRaw(body)
        #expect(reply.status == 500)
        #expect(reply.text.contains("element 'notification/recipients' is longer than"))
        try await Self.expectNothingStored(like: "bad-huge-recipient")
    }

    @Test("requests keep being answered while hostile ones arrive concurrently")
    func concurrentAbuse() async throws {
        try await GatewayHarness.with { harness in
            let hostile = HostileSOAP.cases.map(\.body)
            let results = try await withThrowingTaskGroup(of: Int.self) { group in
                for round in 0..<40 {
                    group.addTask {
                        try await harness.soapRaw(hostile[round % hostile.count]).status
                    }
                    group.addTask {
                        try await harness.soap("<inb:getDeliveryStatus><id>none</id></inb:getDeliveryStatus>").status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { $0 == 200 }.count == 40)
            #expect(results.allSatisfy { $0 == 200 || $0 == 500 })
        }
    }

    static func expectNothingStored(like prefix: String) async throws {
        let pool = try await TestDatabase.migratedPool(size: 1)
        defer { pool.close() }
        let count = try await pool.withConnection {
            try $0.query(sql: "SELECT count(*) FROM notifications WHERE id LIKE $1 || '%'", [prefix]).scalar
        }
        #expect(count == "0")
        let leaked = try await pool.withConnection {
            try $0.query(sql: "SELECT count(*) FROM deliveries WHERE user_id LIKE '%root:x:0:0%'").scalar
        }
        #expect(leaked == "0")
    }

    /// Runs curl (for requests URLSession cannot make, like a chunked upload) and returns
    /// "<status> <body>".
    static func curl(_ arguments: [String], stdin: Data? = nil) async throws -> String {
        let data = try await ChildProcess.run("/usr/bin/curl", ["-sS", "-o", "-", "-w", "%{http_code}", "-X", "POST"] + arguments, input: stdin, allowFailure: true)
        let text = String(decoding: data, as: UTF8.self)
        return String(text.suffix(3)) + " " + text.dropLast(3)
    }
}
