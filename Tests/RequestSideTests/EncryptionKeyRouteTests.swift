import Foundation
import PigeonCrypto
import PigeonTestSupport
import Testing

/// A device's key for confidential notifications at registration (CONTRACT §8) through the
/// router: checked before anything is stored, kept, replaced or removed by a bearer-proved
/// refresh, carried through the bank's SMS verification.
@Suite("Device encryption keys through the router", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct EncryptionKeyRouteTests {
    static func key(_ keyId: String = "k1") throws -> (member: String, point: Data) {
        let point = try P256PrivateKey().publicPoint
        return (#"{"keyId":"\#(keyId)","publicKey":"\#(Base64URL.encode(point))"}"#, point)
    }

    static func registration(user: String, encryptionKey member: String) -> String {
        RouterHarness.registration(user: user, extra: #","encryptionKey":"# + member)
    }

    @Test("a key off the curve, of the wrong size, in bad base64url, with a bad keyId or of the wrong type is 400 BAD_ENCRYPTION_KEY and nothing is stored")
    func badKeys() async throws {
        let harness = try RouterHarness(authorizedUsers: ["alice"])
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
            for user in ["alice", "carol"] {  // subscribed at once, and through the SMS flow
                let answer = await harness.call("POST", "/api/v1/devices/register", body: Self.registration(user: user, encryptionKey: member))
                #expect(answer.status == 400, "\(member) → \(answer.status) \(answer.text)")
                #expect(answer.json["error"] == "BAD_ENCRYPTION_KEY", "\(member) → \(answer.text)")
            }
        }
        #expect(harness.stores.devices.isEmpty && harness.stores.pendingRegistrations.isEmpty)
        #expect(harness.bank.calls == 0, "a bad key is refused before the bank sends an SMS")
    }

    @Test("stored at registration; a refresh without the member keeps it, with a new one replaces it, with null removes it; a bad one changes nothing; the SMS flow keeps it")
    func lifecycle() async throws {
        let harness = try RouterHarness(authorizedUsers: ["alice"])
        let first = try Self.key("k1"), second = try Self.key("k2")
        func stored() -> String? { harness.stores.devices.first { $0.identity.userId == "alice" }?.encryptionKey?.keyId }
        let subscribed = await harness.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: first.member))
        let bearer = try #require(subscribed.json["authenticationToken"])
        #expect(stored() == "k1")
        #expect(harness.stores.devices.first?.encryptionKey?.publicKey == first.point)
        let kept = await harness.call("POST", "/api/v1/devices/register", body: RouterHarness.registration(user: "alice"), bearer: bearer)
        #expect(stored() == "k1")
        let keptBearer = try #require(kept.json["authenticationToken"])
        let rotated = await harness.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: second.member), bearer: keptBearer)
        #expect(stored() == "k2")
        let rotatedBearer = try #require(rotated.json["authenticationToken"])
        let refused = await harness.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: #"{"keyId":"k3","publicKey":"AAAA"}"#), bearer: rotatedBearer)
        #expect(refused.status == 400)
        #expect(stored() == "k2")
        #expect(await harness.call("POST", "/api/v1/devices/register", body: Self.registration(user: "alice", encryptionKey: "null"), bearer: rotatedBearer).status == 200)
        #expect(stored() == nil)

        let pending = await harness.call("POST", "/api/v1/devices/register", body: Self.registration(user: "carol", encryptionKey: first.member))
        #expect(pending.status == 202)
        let code = try #require(harness.bank.code(userId: "carol", deviceId: "phone-1"))
        let verified = await harness.call("POST", "/api/v1/devices/verify", body: RouterHarness.verification(
            user: "carol", registrationId: try #require(pending.json["registrationId"]), code: code))
        #expect(verified.status == 200)
        #expect(harness.stores.devices.first { $0.identity.userId == "carol" }?.encryptionKey?.keyId == "k1")
    }
}
