import Foundation
import PigeonCrypto
import PigeonTestSupport
@testable import PushTransport
import Testing

/// Keys are made by the openssl command line, an implementation independent of our wrapper.
@Suite("Signing: ES256 provider tokens and RS256 service-account assertions", .enabled(if: TestTier.runsIntegration, "integration tier (keys made by openssl): PIGEON_TEST_TIER"))
struct CredentialsTests {
    static func openssl(_ arguments: [String], input: Data? = nil) throws -> Data {
        try ChildProcess.runBlocking("/usr/bin/openssl", arguments, input: input)
    }

    static func pem(_ arguments: [String]) throws -> String {
        String(decoding: try openssl(arguments), as: UTF8.self)
    }

    static let ecKey: String = try! pem(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
    static let rsaKey: String = try! pem(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])

    @Test("ES256 signatures are 64 raw bytes, verify, and fail when tampered")
    func es256() throws {
        let key = try PrivateKey(pem: Self.ecKey)
        let message = Data("header.claims".utf8)
        let signature = try key.sign(message, algorithm: .es256)
        #expect(signature.count == 64)
        let publicKey = try key.publicKey()
        #expect(publicKey.verify(signature, for: message, algorithm: .es256))
        #expect(!publicKey.verify(signature, for: Data("header.claimz".utf8), algorithm: .es256))
        var flipped = signature
        flipped[10] ^= 0x01
        #expect(!publicKey.verify(flipped, for: message, algorithm: .es256))
    }

    @Test("RS256 signatures verify with the openssl command line")
    func rs256() throws {
        let key = try PrivateKey(pem: Self.rsaKey)
        let message = Data("payload to sign".utf8)
        let signature = try key.sign(message, algorithm: .rs256)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let publicPEM = try Self.openssl(["pkey", "-pubout"], input: Data(Self.rsaKey.utf8))
        try publicPEM.write(to: folder.appendingPathComponent("pub.pem"))
        try signature.write(to: folder.appendingPathComponent("sig"))
        let verdict = try Self.openssl(["dgst", "-sha256", "-verify", folder.appendingPathComponent("pub.pem").path,
                                        "-signature", folder.appendingPathComponent("sig").path], input: message)
        #expect(String(decoding: verdict, as: UTF8.self).contains("Verified OK"))
    }

    @Test("the APNs provider token carries kid, iss and iat and verifies")
    func providerToken() throws {
        let credentials = try APNsSigningCredentials(p8PEM: Self.ecKey, keyId: "ABC123DEFG", teamId: "TEAM123456")
        let token = try credentials.providerToken(issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let verified = try #require(JSONWebToken.verify(token, key: try credentials.key.publicKey()))
        #expect(verified.signatureValid)
        #expect(verified.header["alg"] as? String == "ES256")
        #expect(verified.header["kid"] as? String == "ABC123DEFG")
        #expect(verified.claims["iss"] as? String == "TEAM123456")
        #expect(verified.claims["iat"] as? Int == 1_700_000_000)
        let other = try PrivateKey(pem: try Self.pem(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]))
        #expect(JSONWebToken.verify(token, key: try other.publicKey())?.signatureValid == false)
    }

    @Test("the service account assertion has the FCM scope and a one-hour lifetime")
    func serviceAccount() throws {
        let json: [String: Any] = [
            "type": "service_account", "project_id": "bank-prod", "private_key_id": "k1",
            "private_key": Self.rsaKey, "client_email": "pigeon@bank-prod.iam.gserviceaccount.com",
            "token_uri": "https://127.0.0.1:2198/token",
        ]
        let account = try ServiceAccount(json: try JSONSerialization.data(withJSONObject: json))
        #expect(account.projectId == "bank-prod")
        let assertion = try account.assertion(issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let verified = try #require(JSONWebToken.verify(assertion, key: try account.key.publicKey()))
        #expect(verified.signatureValid)
        #expect(verified.header["alg"] as? String == "RS256")
        #expect(verified.header["kid"] as? String == "k1")
        #expect(verified.claims["scope"] as? String == ServiceAccount.messagingScope)
        #expect(verified.claims["aud"] as? String == "https://127.0.0.1:2198/token")
        #expect(verified.claims["exp"] as? Int == 1_700_003_600)
        #expect(throws: CryptoError.self) { try ServiceAccount(json: Data(#"{"project_id":"p"}"#.utf8)) }
        #expect(throws: CryptoError.self) { try PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n") }
    }
}
