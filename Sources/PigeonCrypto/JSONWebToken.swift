import Foundation

/// Compact JWS tokens (RFC 7519): header and claims as JSON, signed ES256 or RS256.
package enum JSONWebToken {
    /// `base64url(header).base64url(claims).base64url(signature)`.
    package static func sign(header: [String: Any], claims: [String: Any], key: PrivateKey, algorithm: SignatureAlgorithm) throws(CryptoError) -> String {
        var header = header
        header["alg"] = algorithm.rawValue
        let encodedHeader: Data
        let encodedClaims: Data
        do {
            encodedHeader = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
            encodedClaims = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        } catch {
            throw CryptoError(operation: "encoding the token", reason: "\(error)")
        }
        let signingInput = Base64URL.encode(encodedHeader) + "." + Base64URL.encode(encodedClaims)
        let signature = try key.sign(Data(signingInput.utf8), algorithm: algorithm)
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// A token taken apart; `signatureValid` says whether `key` signed it with its header's `alg`.
    package struct Verified: @unchecked Sendable {
        // @unchecked: the dictionaries hold JSON values only (strings, numbers, arrays, dictionaries).
        package var header: [String: Any]
        package var claims: [String: Any]
        package var signatureValid: Bool
    }

    /// Parses `token` and checks its signature; `nil` when it is not a well-formed JWS.
    package static func verify(_ token: String, key: PublicKey) -> Verified? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
              let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any],
              let algorithm = (header["alg"] as? String).flatMap(SignatureAlgorithm.init(rawValue:))
        else { return nil }
        let valid = key.verify(signature, for: Data("\(parts[0]).\(parts[1])".utf8), algorithm: algorithm)
        return Verified(header: header, claims: claims, signatureValid: valid)
    }
}
