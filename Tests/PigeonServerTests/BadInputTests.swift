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
    static let passwdMarker = "root:x:0:0"

    /// A request body and what the answer must contain.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var body: Data
        var status: Int
        var reason: String
        var testDescription: String { name }
    }

    static func send(_ id: String, recipient: String = "u", timeout: String = "60", doctype: String = "", entity: String = "") -> String {
        "<?xml version=\"1.0\"?>\(doctype)" + GatewayHarness.envelope(GatewayHarness.sendNotification(id: id, recipients: [recipient + entity], timeout: timeout))
    }

    static let cases: [Case] = {
        var cases: [Case] = []
        func add(_ name: String, _ body: String, _ status: Int, _ reason: String) {
            cases.append(Case(name: name, body: Data(body.utf8), status: status, reason: reason))
        }
        add("malformed XML", "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><oops></soapenv:Body>", 500, "malformed XML")
        add("external entity to /etc/passwd",
            send("bad-xxe", doctype: "<!DOCTYPE foo [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>", entity: "&xxe;"), 500, "DTDs and entity declarations are not accepted")
        add("external entity over HTTP",
            send("bad-xxe-http", doctype: "<!DOCTYPE foo [<!ENTITY xxe SYSTEM \"http://127.0.0.1:9/x\">]>", entity: "&xxe;"), 500, "DTDs")
        var laughs = "<!DOCTYPE lolz [<!ENTITY lol \"lol\">"
        for level in 1...9 {
            laughs += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level == 1 ? "" : String(level - 1));", count: 10) + "\">"
        }
        add("billion laughs", send("bad-laughs", doctype: laughs + "]>", entity: "&lol9;"), 500, "DTDs")
        add("quadratic blow-up",
            send("bad-quadratic", doctype: "<!DOCTYPE q [<!ENTITY a \"\(String(repeating: "B", count: 30_000))\">]>", entity: String(repeating: "&a;", count: 3_000)), 500, "DTDs")
        add("wrong type", send("bad-type", timeout: "abc"), 500, "element 'notification/timeout' must be an int, got 'abc'")
        add("missing required field",
            GatewayHarness.envelope("<inb:sendNotification><notification><id>bad-missing</id><pushContent><text>t</text><type>URL</type></pushContent><timeout>5</timeout></notification></inb:sendNotification>"),
            500, "missing required element 'notification/recipients'")
        add("unknown operation", GatewayHarness.envelope("<inb:launchMissiles><target>moon</target></inb:launchMissiles>"), 500, "unknown operation 'launchMissiles'")
        add("empty body", "", 500, "the request body is empty")
        add("not SOAP", "{\"json\": true}", 500, "does not start with")
        let doctype = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>" + GatewayHarness.envelope(GatewayHarness.sendNotification(id: "bad-utf16", recipients: ["&e;"]))
        cases.append(Case(name: "DOCTYPE in UTF-16 without BOM", body: doctype.data(using: .utf16LittleEndian)!, status: 500, reason: "NUL bytes"))
        cases.append(Case(name: "DOCTYPE in UTF-16BE without BOM", body: doctype.data(using: .utf16BigEndian)!, status: 500, reason: "NUL bytes"))
        add("DOCTYPE in UTF-7", "<?xml version=\"1.0\" encoding=\"UTF-7\"?>+ADw-!DOCTYPE x +AFs-+ADw-!ENTITY e SYSTEM +ACI-file:///etc/passwd+ACI-+AD4-+AF0-+AD4-+ADw-x+AD4-+ACY-e+ADs-+ADw-/x+AD4-", 500, "encoding 'UTF-7' is not accepted")
        // "<?xml version="1.0" encoding="IBM037"?><!DOCTYPE" in EBCDIC code page 037.
        let ebcdic: [UInt8] = [0x4C, 0x6F, 0xA7, 0x94, 0x93, 0x40, 0xA5, 0x85, 0x99, 0xA2, 0x89, 0x96, 0x95, 0x7E, 0x7F, 0xF1, 0x4B, 0xF0, 0x7F, 0x6F, 0x6E, 0x4C, 0x5A, 0xC4, 0xD6, 0xC3, 0xE3, 0xE8, 0xD7, 0xC5]
        cases.append(Case(name: "DOCTYPE in EBCDIC", body: Data(ebcdic), status: 500, reason: "does not start with"))
        return cases
    }()

    @Test("each hostile request is refused cleanly", arguments: cases)
    func refused(_ badCase: Case) async throws {
        let harness = try await GatewayHarness()
        let reply = try await harness.soapRaw(badCase.body)
        #expect(reply.status == badCase.status)
        #expect(reply.text.contains(badCase.reason), "\(reply.text)")
        #expect(!reply.text.contains(Self.passwdMarker))
        if badCase.status == 500 {
            #expect(reply.text.contains("<faultcode>soap:Client</faultcode>"))
        }
        #expect(try await harness.request("GET", "/health").status == 200)
        try await Self.expectNothingStored(like: "bad-")
    }

    @Test("a 50 MB body gets 413, declared or chunked, and the server keeps answering")
    func hugeBody() async throws {
        let harness = try await GatewayHarness()
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
        let harness = try await GatewayHarness()
        let hostile = Self.cases.map(\.body)
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

    static func expectNothingStored(like prefix: String) async throws {
        let pool = try await TestDatabase.migratedPool(size: 1)
        defer { pool.close() }
        let count = try await pool.withConnection {
            try $0.query("SELECT count(*) FROM notifications WHERE id LIKE $1 || '%'", [prefix]).scalar
        }
        #expect(count == "0")
        let leaked = try await pool.withConnection {
            try $0.query("SELECT count(*) FROM deliveries WHERE user_id LIKE '%root:x:0:0%'").scalar
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
