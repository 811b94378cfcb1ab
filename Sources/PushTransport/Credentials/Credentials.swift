import Foundation
import PigeonCrypto
import PushCore

/// APNs token-based authentication: the `.p8` key, its key id and the team id.
package struct APNsSigningCredentials: Sendable {
    package let key: PrivateKey
    package let keyId: String
    package let teamId: String

    package init(p8PEM: String, keyId: String, teamId: String) throws(CryptoError) {
        self.key = try PrivateKey(pem: p8PEM)
        self.keyId = keyId
        self.teamId = teamId
    }

    /// A provider token issued at `issuedAt`: ES256, `kid` = key id, `iss` = team id.
    package func providerToken(issuedAt: Date) throws(CryptoError) -> String {
        try JSONWebToken.sign(
            header: ["kid": keyId, "typ": "JWT"],
            claims: ["iss": teamId, "iat": Int(issuedAt.timeIntervalSince1970)],
            key: key, algorithm: .es256)
    }
}

/// A Google service account (the JSON file `fcmServiceAccountPath` names).
package struct ServiceAccount: Sendable {
    package static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    package let projectId: String
    package let clientEmail: String
    package let tokenURI: String
    package let privateKeyId: String?
    package let key: PrivateKey

    /// Reads the fields FCM needs; the error names the missing one.
    package init(json: Data) throws(CryptoError) {
        struct File: Decodable {
            var project_id: String?
            var client_email: String?
            var token_uri: String?
            var private_key: String?
            var private_key_id: String?
        }
        guard let file = try? JSONDecoder().decode(File.self, from: json) else {
            throw CryptoError(operation: "reading the service account", reason: "not a JSON object")
        }
        func required(_ value: String?, _ name: String) throws(CryptoError) -> String {
            guard let value, !value.isEmpty else {
                throw CryptoError(operation: "reading the service account", reason: "'\(name)' is missing")
            }
            return value
        }
        projectId = try required(file.project_id, "project_id")
        clientEmail = try required(file.client_email, "client_email")
        tokenURI = file.token_uri ?? "https://oauth2.googleapis.com/token"
        privateKeyId = file.private_key_id
        key = try PrivateKey(pem: try required(file.private_key, "private_key"))
    }

    /// The RS256 assertion exchanged for an access token (grant type jwt-bearer), valid one hour.
    package func assertion(issuedAt: Date, audience: String? = nil) throws(CryptoError) -> String {
        var header: [String: Any] = ["typ": "JWT"]
        if let privateKeyId { header["kid"] = privateKeyId }
        let issued = Int(issuedAt.timeIntervalSince1970)
        return try JSONWebToken.sign(
            header: header,
            claims: ["iss": clientEmail, "scope": Self.messagingScope, "aud": audience ?? tokenURI, "iat": issued, "exp": issued + 3600],
            key: key, algorithm: .rs256)
    }
}
