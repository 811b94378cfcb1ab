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

    @Test("stored at registration; a refresh without the member keeps it, with a new one replaces it, with null removes it; the SMS flow keeps it")
    func lifecycle() async throws {
        let flow = try await DeviceFlowHarness()
        let first = try Self.key("k1"), second = try Self.key("k2")
        let subscribed = try await flow.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: first.member))
        #expect(subscribed.status == 200)
        let bearer = try #require(subscribed.json["authenticationToken"])
        func stored() async throws -> String {
            try await flow.database.pool.withConnection {
                try $0.query(sql: "SELECT coalesce(encryption_key_id, '-') || ':' || coalesce(encode(encryption_public_key, 'hex'), '-') FROM devices WHERE user_id = 'alice'").scalar ?? ""
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
