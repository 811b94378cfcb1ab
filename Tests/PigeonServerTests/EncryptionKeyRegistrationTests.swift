import Foundation
import PigeonCrypto
import PigeonTestSupport
import Testing
@testable import PigeonServer

/// A device's key for confidential notifications at registration (CONTRACT §8): validated
/// before anything is stored, kept, replaced or removed by a bearer-proved refresh, carried
/// through the bank's SMS verification, shown (its id) in the console.
@Suite("Device encryption keys", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct EncryptionKeyRegistrationTests {
    static func key(_ keyId: String = "k1") throws -> (member: String, point: Data) {
        let point = try P256PrivateKey().publicPoint
        return (#"{"keyId":"\#(keyId)","publicKey":"\#(Base64URL.encode(point))"}"#, point)
    }

    static func registration(user: String, encryptionKey member: String) -> String {
        String(DeviceFlowHarness.registration(user: user).dropLast()) + #","encryptionKey":"# + member + "}"
    }

    @Test("a key off the curve, of the wrong size, in bad base64url, with a bad keyId or of the wrong type is 400 BAD_ENCRYPTION_KEY and nothing is stored")
    func badKeys() async throws {
        let flow = try await DeviceFlowHarness()
        let offCurve = Data([4] + [UInt8](repeating: 7, count: 64))
        let good = try Self.key().point
        let compressed = Data([2]) + good[1..<33]
        let members = [
            #"{"keyId":"k1","publicKey":"\#(Base64URL.encode(offCurve))"}"#,
            #"{"keyId":"k1","publicKey":"\#(Base64URL.encode(compressed))"}"#,
            #"{"keyId":"k1","publicKey":"\#(Base64URL.encode(good + [0]))"}"#,
            #"{"keyId":"k1","publicKey":"\#(good.base64EncodedString())"}"#,
            #"{"keyId":"k1","publicKey":"\#(Base64URL.encode(good))="}"#,
            #"{"keyId":"k1","publicKey":"!!!"}"#,
            #"{"keyId":"has space","publicKey":"\#(Base64URL.encode(good))"}"#,
            #"{"keyId":"","publicKey":"\#(Base64URL.encode(good))"}"#,
            #"{"keyId":"\#(String(repeating: "k", count: 65))","publicKey":"\#(Base64URL.encode(good))"}"#,
            #"{"keyId":7,"publicKey":"\#(Base64URL.encode(good))"}"#,
            #"{"publicKey":"\#(Base64URL.encode(good))"}"#,
            #"{"keyId":"k1","publicKey":"\#(Base64URL.encode(good))","privateKey":"x"}"#,
            #""a string""#,
            "[1]",
        ]
        for member in members {
            let answer = try await flow.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: member))
            #expect(answer.status == 400, "\(member) → \(answer.status) \(answer.body)")
            #expect(answer.json["error"] == "BAD_ENCRYPTION_KEY", "\(member) → \(answer.body)")
        }
        #expect(try await flow.count("SELECT count(*) FROM devices") == 0)
        #expect(try await flow.count("SELECT count(*) FROM pending_registrations") == 0)
        await flow.stop()
    }

    @Test("stored at registration; a refresh without the member keeps it, with a new one replaces it, with null removes it; the SMS flow keeps it")
    func lifecycle() async throws {
        let flow = try await DeviceFlowHarness()
        let first = try Self.key("k1"), second = try Self.key("k2")
        let subscribed = try await flow.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: first.member))
        #expect(subscribed.status == 200)
        let bearer = try #require(subscribed.json["authenticationToken"])
        func stored() async throws -> String {
            try await flow.database.pool.withConnection {
                try $0.query("SELECT coalesce(encryption_key_id, '-') || ':' || coalesce(encode(encryption_public_key, 'hex'), '-') FROM devices WHERE user_id = 'alice'").scalar ?? ""
            }
        }
        #expect(try await stored() == "k1:" + first.point.map { String(format: "%02x", $0) }.joined())
        // A refresh without the member: kept.
        let kept = try await flow.register(user: "alice", token: String(repeating: "cd", count: 32), bearer: bearer)
        #expect(try await stored().hasPrefix("k1:"))
        // Rotation.
        let rotated = try await flow.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: second.member), bearer: kept)
        #expect(rotated.status == 200)
        #expect(try await stored() == "k2:" + second.point.map { String(format: "%02x", $0) }.joined())
        // A bad key on a refresh changes nothing.
        let refused = try await flow.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: #"{"keyId":"k3","publicKey":"AAAA"}"#),
                                          bearer: try #require(rotated.json["authenticationToken"]))
        #expect(refused.status == 400)
        #expect(try await stored().hasPrefix("k2:"))
        // null: removed.
        let removed = try await flow.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: "null"),
                                          bearer: try #require(rotated.json["authenticationToken"]))
        #expect(removed.status == 200)
        #expect(try await stored() == "-:-")

        // Through the bank's SMS flow (carol is not pre-authorized), the key waits with the registration.
        let pending = try await flow.call("POST", "/api/v1/devices/register", body: Self.registration(user: "carol", encryptionKey: first.member))
        #expect(pending.status == 202)
        let code = try #require(flow.stub.code(bankClientId: "bank", userId: "carol", deviceId: "phone-1"))
        let verified = try await flow.call("POST", "/api/v1/devices/verify", body: DeviceFlowHarness.verification(
            user: "carol", device: "phone-1", registrationId: try #require(pending.json["registrationId"]), code: code))
        #expect(verified.status == 200)
        #expect(try await flow.count("SELECT count(*) FROM devices WHERE user_id = 'carol' AND encryption_key_id = 'k1'") == 1)
        await flow.stop()
    }
}
