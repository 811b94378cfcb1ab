import Foundation
import PigeonDomain
import PigeonCrypto
import PigeonHTTP
@testable import PigeonWallet
import Testing
import PigeonTestSupport

/// The PassKit web service's requests read without a store or a listener: which call each
/// is, and what is refused with which status before anything is looked up.
@Suite("PassKit calls", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PassKitCallTests {
    static let token = "0123456789abcdef0123456789abcdef"
    static let pushToken = String(repeating: "a1", count: 32)

    static func call(_ method: String, _ path: String, query: [(name: String, value: String?)] = [], headers: [String: String] = [:],
                     body: String = "", tooLarge: Bool = false) -> Result<PassKitCall, PassKitRefusal> {
        let request = HTTPRequest(method: method, path: path, query: query, headers: headers, body: Data(body.utf8), bodyTooLarge: tooLarge)
        return Result { () throws(PassKitRefusal) in try PassKitCall.parse(request, parts: PassKitCall.parts(of: path, prefix: "/passkit")) }
    }

    static func status(_ result: Result<PassKitCall, PassKitRefusal>) -> Int? {
        if case .failure(let refusal) = result { return refusal.status }
        return nil
    }

    @Test("each of Apple's five calls is read with its identifiers, token digest and conditions")
    func calls() throws {
        let pass = PassIdentity(passTypeIdentifier: "pass.com.example.card", serialNumber: "SN-1")
        let auth = ["authorization": "ApplePass \(Self.token)"]
        let path = "/passkit/v1/devices/dev1/registrations/pass.com.example.card/SN-1"
        #expect(try Self.call("POST", path, headers: auth, body: #"{"pushToken":"\#(Self.pushToken)"}"#).get()
            == .register(device: "dev1", pass: pass, pushToken: Self.pushToken, authenticationDigest: SecretToken.digest(Self.token)))
        #expect(try Self.call("DELETE", path, headers: auth).get()
            == .unregister(device: "dev1", pass: pass, authenticationDigest: SecretToken.digest(Self.token)))
        #expect(try Self.call("GET", "/passkit/v1/devices/dev1/registrations/pass.com.example.card",
                              query: [("passesUpdatedSince", "1733000000")]).get()
            == .serials(device: "dev1", passType: "pass.com.example.card", since: 1_733_000_000))
        #expect(try Self.call("GET", "/passkit/v1/passes/pass.com.example.card/SN-1",
                              headers: auth.merging(["if-modified-since": "Sun, 06 Nov 1994 08:49:37 GMT"]) { $1 }).get()
            == .pass(pass, authenticationDigest: SecretToken.digest(Self.token), ifModifiedSince: Date(timeIntervalSince1970: 784_111_777)))
        #expect(try Self.call("POST", "/passkit/v1/log", body: #"{"logs":["one",2,"three"]}"#).get() == .log(messages: ["one", "three"]))
    }

    @Test("an unreadable tag or date means everything, not a failure")
    func lenientConditions() throws {
        for since in ["", "abc", "-", String(repeating: "9", count: 25)] {
            #expect(try Self.call("GET", "/passkit/v1/devices/d/registrations/pass.x", query: [("passesUpdatedSince", since)]).get()
                == .serials(device: "d", passType: "pass.x", since: nil), "\(since)")
        }
    }

    @Test("refusals come before any lookup, with the status a Wallet acts on")
    func refusals() {
        let path = "/passkit/v1/devices/dev1/registrations/pass.com.example.card/SN-1"
        let good = #"{"pushToken":"\#(Self.pushToken)"}"#
        let auth = ["authorization": "ApplePass \(Self.token)"]
        #expect(Self.status(Self.call("POST", path, body: good)) == 401)
        #expect(Self.status(Self.call("POST", path, headers: ["authorization": "ApplePass short"], body: good)) == 401)
        #expect(Self.status(Self.call("POST", path, headers: ["authorization": "ApplePass \(Self.token)\u{0}"], body: good)) == 401)
        #expect(Self.status(Self.call("POST", path, headers: auth, body: "[]")) == 400)
        #expect(Self.status(Self.call("POST", path, headers: auth, body: #"{"pushToken":"zz"}"#)) == 400)
        #expect(Self.status(Self.call("POST", path, headers: auth, tooLarge: true)) == 413)
        #expect(Self.status(Self.call("POST", "/passkit/v1/devices/dev1/registrations/pass.x/\(String(repeating: "s", count: 300))",
                                      headers: auth, body: good)) == 400)
        #expect(Self.status(Self.call("POST", "/passkit/v1/log", body: "{}")) == 400)
        #expect(Self.status(Self.call("POST", "/passkit/v1/log", tooLarge: true)) == 413)
        // Empty parts are kept: `v1//log` is not `v1/log`.
        for missing in ["/passkit/v1//log", "/passkit/v2/log", "/passkit/", "/passkit/v1/passes/a", "/passkit/v1/devices/d/registrations/p/s/extra"] {
            #expect(Self.status(Self.call("POST", missing)) == 404, "\(missing)")
        }
    }

    @Test("a wrong method is 405 with the methods the resource takes")
    func methods() {
        for (method, path, allowed) in [("GET", "/passkit/v1/devices/d/registrations/p/s", "POST, DELETE"),
                                        ("POST", "/passkit/v1/passes/p/s", "GET"), ("DELETE", "/passkit/v1/log", "POST")] {
            guard case .failure(let refusal) = Self.call(method, path) else {
                Issue.record("\(method) \(path) was accepted")
                continue
            }
            #expect(refusal.status == 405)
            #expect(refusal.response.headers.contains { $0.name == "Allow" && $0.value == allowed })
        }
    }

    @Test("a log call keeps at most 10 messages of 256 characters, escaped")
    func logBounded() throws {
        let long = String(repeating: "x", count: 1000)
        let body = try String(decoding: JSONSerialization.data(withJSONObject: ["logs": Array(repeating: long, count: 50) + ["a\u{2028}b"]]),
                              as: UTF8.self)
        guard case .log(let messages) = try Self.call("POST", "/passkit/v1/log", body: body).get() else {
            Issue.record("not a log call")
            return
        }
        #expect(messages.count == PassKitCall.maximumLogMessages)
        #expect(messages.allSatisfy { $0.count <= PassKitCall.maximumLogMessageLength + 3 })
        let escaped = try Self.call("POST", "/passkit/v1/log", body: #"{"logs":["a\u2028b\u202Ec"]}"#).get()
        #expect(escaped != .log(messages: ["a\u{2028}b\u{202E}c"]))
    }
}
