internal import COpenSSL
import Foundation

/// The signature algorithms JWTs for APNs and FCM use.
package enum SignatureAlgorithm: String, Sendable {
    /// ECDSA P-256 with SHA-256; signatures in JOSE's raw `R || S` form (64 bytes).
    case es256 = "ES256"
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    case rs256 = "RS256"
}

/// A private key read from PEM (an APNs `.p8`, a service account's `private_key`).
package final class PrivateKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never mutated after init; OpenSSL allows concurrent signing
    // with one key (each signature uses its own EVP_MD_CTX).
    let key: OpaquePointer

    /// Parses a PEM private key (PKCS#8, or the traditional EC/RSA forms).
    package init(pem: String) throws(CryptoError) {
        key = try readPEM(pem, "parsing the PEM private key") { PEM_read_bio_PrivateKey($0, nil, nil, nil) }
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The matching public key.
    package func publicKey() throws(CryptoError) -> PublicKey {
        let bio = try OpenSSLCall.require(BIO_new(BIO_s_mem()), "exporting the public key")
        defer { BIO_free(bio) }
        try OpenSSLCall.check(PEM_write_bio_PUBKEY(bio, key), "exporting the public key")
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard let pointer, length > 0 else { throw CryptoError(operation: "exporting the public key", reason: "empty") }
        let pem = String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
        return try PublicKey(pem: pem)
    }

    /// Signs `message` with SHA-256 under `algorithm`.
    package func sign(_ message: Data, algorithm: SignatureAlgorithm) throws(CryptoError) -> Data {
        let context = try OpenSSLCall.require(EVP_MD_CTX_new(), "signing")
        defer { EVP_MD_CTX_free(context) }
        try OpenSSLCall.check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key), "signing (\(algorithm.rawValue))")
        var length = 0
        let bytes = Array(message)
        try OpenSSLCall.check(EVP_DigestSign(context, nil, &length, bytes, bytes.count), "signing")
        var signature = [UInt8](repeating: 0, count: length)
        try OpenSSLCall.check(EVP_DigestSign(context, &signature, &length, bytes, bytes.count), "signing")
        let der = Array(signature.prefix(length))
        switch algorithm {
        case .rs256: return Data(der)
        case .es256: return try ECDSASignature.rawFromDER(der)
        }
    }
}

/// A public key read from PEM, for verifying signatures (the simulator checks tokens with it).
package final class PublicKey: @unchecked Sendable {
    // @unchecked: immutable after init, as for PrivateKey.
    let key: OpaquePointer

    package init(pem: String) throws(CryptoError) {
        key = try readPEM(pem, "parsing the PEM public key") { PEM_read_bio_PUBKEY($0, nil, nil, nil) }
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Whether `signature` over `message` is valid under `algorithm`.
    package func verify(_ signature: Data, for message: Data, algorithm: SignatureAlgorithm) -> Bool {
        let der: [UInt8]
        switch algorithm {
        case .rs256: der = Array(signature)
        case .es256:
            guard let converted = try? ECDSASignature.derFromRaw(Array(signature)) else { return false }
            der = converted
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            _ = OpenSSLCall.lastError()
            return false
        }
        let bytes = Array(message)
        let valid = EVP_DigestVerify(context, der, der.count, bytes, bytes.count) == 1
        if !valid { _ = OpenSSLCall.lastError() }
        return valid
    }
}

/// Runs an OpenSSL PEM reader over a copy of `pem` in a memory BIO. (BIO_new_mem_buf would
/// only borrow the bytes, which Swift may free as soon as the closure that exposed them returns.)
private func readPEM(_ pem: String, _ operation: String, _ read: (OpaquePointer) -> OpaquePointer?) throws(CryptoError) -> OpaquePointer {
    let bio = try OpenSSLCall.require(BIO_new(BIO_s_mem()), operation)
    defer { BIO_free(bio) }
    let bytes = Array(pem.utf8)
    let written = bytes.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32($0.count)) }
    guard written == bytes.count else { throw CryptoError(operation: operation, reason: "cannot buffer the PEM text") }
    return try OpenSSLCall.require(read(bio), operation)
}

/// Converts ECDSA P-256 signatures between DER (OpenSSL) and JOSE's raw `R || S`.
enum ECDSASignature {
    static func rawFromDER(_ der: [UInt8]) throws(CryptoError) -> Data {
        var cursor: UnsafePointer<UInt8>? = nil
        let signature = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        let parsed = try OpenSSLCall.require(signature, "decoding the ECDSA signature")
        defer { ECDSA_SIG_free(parsed) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(parsed, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        guard let r, let s,
              BN_bn2binpad(r, &raw, 32) == 32,
              raw.withUnsafeMutableBufferPointer({ BN_bn2binpad(s, $0.baseAddress! + 32, 32) }) == 32
        else {
            throw CryptoError(operation: "encoding the ECDSA signature", reason: "not a P-256 signature")
        }
        return Data(raw)
    }

    static func derFromRaw(_ raw: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard raw.count == 64 else { throw CryptoError(operation: "decoding the ECDSA signature", reason: "expected 64 bytes") }
        let signature = try OpenSSLCall.require(ECDSA_SIG_new(), "decoding the ECDSA signature")
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, 32, nil)
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            throw CryptoError(operation: "decoding the ECDSA signature", reason: OpenSSLCall.lastError())
        }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &output)
        guard length > 0, let output else {
            throw CryptoError(operation: "encoding the ECDSA signature", reason: OpenSSLCall.lastError())
        }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}
