internal import COpenSSL
import Foundation

/// P-256 keys as Web Push uses them (RFC 8291): points in uncompressed form (65 bytes, 0x04 ‖ X ‖
/// Y), ephemeral key pairs, and ECDH. Keys travel as DER inside: a raw point is wrapped in the
/// fixed SubjectPublicKeyInfo prefix of a P-256 key, so no deprecated EC_KEY call is needed.
package final class P256PrivateKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never mutated after init.
    let key: OpaquePointer

    /// A new random key pair (the ephemeral key of one message).
    package init() throws(CryptoError) {
        let context = try OpenSSLCall.require(EVP_PKEY_CTX_new_from_name(nil, "EC", nil), "generating a P-256 key")
        defer { EVP_PKEY_CTX_free(context) }
        try OpenSSLCall.check(EVP_PKEY_keygen_init(context), "generating a P-256 key")
        guard EVP_PKEY_CTX_set_group_name(context, "P-256") > 0 else {
            throw CryptoError(operation: "generating a P-256 key", reason: OpenSSLCall.lastError())
        }
        var generated: OpaquePointer?
        try OpenSSLCall.check(EVP_PKEY_keygen(context, &generated), "generating a P-256 key")
        key = try OpenSSLCall.require(generated, "generating a P-256 key")
    }

    /// A key from its 32-byte private scalar and its public point (test vectors, the simulator).
    package init(privateScalar: Data, publicPoint: Data) throws(CryptoError) {
        guard privateScalar.count == 32, publicPoint.count == 65, publicPoint.first == 4 else {
            throw CryptoError(operation: "reading a P-256 private key", reason: "expected a 32-byte scalar and a 65-byte uncompressed point")
        }
        // SEC 1 ECPrivateKey: version 1, the scalar, the curve's OID, the public point.
        let der = [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20] + Array(privateScalar)
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0xA1, 0x44, 0x03, 0x42, 0x00] + Array(publicPoint)
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PrivateKey(EVP_PKEY_EC, nil, &cursor, buffer.count)
        }
        key = try OpenSSLCall.require(parsed, "reading a P-256 private key")
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The public point, uncompressed (65 bytes).
    package var publicPoint: Data {
        get throws(CryptoError) { try P256Point.uncompressed(of: key) }
    }

    /// The private scalar (32 bytes, big-endian): for test vectors and the simulator's devices.
    package var privateScalar: Data {
        get throws(CryptoError) {
            var number: OpaquePointer?
            guard EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &number) == 1, let number else {
                throw CryptoError(operation: "exporting a P-256 private key", reason: OpenSSLCall.lastError())
            }
            defer { BN_clear_free(number) }
            var bytes = [UInt8](repeating: 0, count: 32)
            guard BN_bn2binpad(number, &bytes, 32) == 32 else {
                throw CryptoError(operation: "exporting a P-256 private key", reason: "the scalar is longer than 32 bytes")
            }
            return Data(bytes)
        }
    }

    /// The ECDH shared secret with `peer` (the X coordinate, 32 bytes).
    package func sharedSecret(with peer: P256PublicKey) throws(CryptoError) -> Data {
        let context = try OpenSSLCall.require(EVP_PKEY_CTX_new(key, nil), "deriving the ECDH secret")
        defer { EVP_PKEY_CTX_free(context) }
        try OpenSSLCall.check(EVP_PKEY_derive_init(context), "deriving the ECDH secret")
        // The peer was checked to lie on the curve when it was read (P256PublicKey); P-256's
        // cofactor is 1, so OpenSSL's second validation here (a scalar multiplication by the
        // group order, half the cost of the ECDH itself) would prove nothing more.
        try OpenSSLCall.check(EVP_PKEY_derive_set_peer_ex(context, peer.key, 0), "deriving the ECDH secret")
        var length = 0
        try OpenSSLCall.check(EVP_PKEY_derive(context, nil, &length), "deriving the ECDH secret")
        var secret = [UInt8](repeating: 0, count: length)
        try OpenSSLCall.check(EVP_PKEY_derive(context, &secret, &length), "deriving the ECDH secret")
        return Data(secret.prefix(length))
    }
}

/// A P-256 public key from its uncompressed point, checked to be on the curve.
package final class P256PublicKey: @unchecked Sendable {
    // @unchecked: immutable after init.
    let key: OpaquePointer

    package init(point: Data) throws(CryptoError) {
        guard point.count == 65, point.first == 4 else {
            throw CryptoError(operation: "reading a P-256 public key", reason: "expected a 65-byte uncompressed point")
        }
        key = try P256Point.publicKey(point)
    }

    deinit {
        EVP_PKEY_free(key)
    }
}

extension PublicKey {
    /// A P-256 verifying key from its uncompressed point (a VAPID `k`).
    package convenience init(p256Point point: Data) throws(CryptoError) {
        _ = try P256PublicKey(point: point)
        let der = Data(P256Point.subjectPublicKeyInfoPrefix) + point
        let pem = "-----BEGIN PUBLIC KEY-----\n" + der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            + "\n-----END PUBLIC KEY-----\n"
        try self.init(pem: pem)
    }
}

extension PrivateKey {
    /// The public point of a P-256 key (a VAPID key's `k`), uncompressed.
    package func p256PublicPoint() throws(CryptoError) -> Data {
        try P256Point.uncompressed(of: key)
    }
}

enum P256Point {
    /// DER SubjectPublicKeyInfo of a P-256 key up to its point: SEQUENCE { SEQUENCE { id-ecPublicKey,
    /// prime256v1 }, BIT STRING (0 unused bits) … }.
    static let subjectPublicKeyInfoPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08,
        0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// The point as OpenSSL holds it: read as a parameter, without the encoder framework (whose
    /// lookups cost more than the ECDH itself).
    static func uncompressed(of key: OpaquePointer) throws(CryptoError) -> Data {
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        if EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, &point, point.count, &length) == 1, length == 65, point[0] == 4 {
            return Data(point)
        }
        _ = OpenSSLCall.lastError()
        return try uncompressedFromDER(of: key)
    }

    /// A public key from its point as key parameters (group and point), without the decoder
    /// framework; OpenSSL checks that the point lies on the curve.
    static func publicKey(_ point: Data) throws(CryptoError) -> OpaquePointer {
        let context = try OpenSSLCall.require(EVP_PKEY_CTX_new_from_name(nil, "EC", nil), "reading a P-256 public key")
        defer { EVP_PKEY_CTX_free(context) }
        try OpenSSLCall.check(EVP_PKEY_fromdata_init(context), "reading a P-256 public key")
        // OSSL_PARAM keeps pointers to its key names and values: every one stays alive in these
        // buffers until EVP_PKEY_fromdata has read them.
        var group = Array("prime256v1".utf8CString)
        let groupKey = Array(OSSL_PKEY_PARAM_GROUP_NAME.utf8CString), pointKey = Array(OSSL_PKEY_PARAM_PUB_KEY.utf8CString)
        var bytes = Array(point)
        var key: OpaquePointer?
        let status = group.withUnsafeMutableBufferPointer { groupName in
            bytes.withUnsafeMutableBytes { pointBytes in
                groupKey.withUnsafeBufferPointer { groupKeyName in
                    pointKey.withUnsafeBufferPointer { pointKeyName in
                        var parameters = [
                            OSSL_PARAM_construct_utf8_string(groupKeyName.baseAddress, groupName.baseAddress, 0),
                            OSSL_PARAM_construct_octet_string(pointKeyName.baseAddress, pointBytes.baseAddress, pointBytes.count),
                            OSSL_PARAM_construct_end(),
                        ]
                        // EVP_PKEY_PUBLIC_KEY, a macro Swift does not import: the parameters and the public key.
                        let selection = Int32(OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)
                        return EVP_PKEY_fromdata(context, &key, selection, &parameters)
                    }
                }
            }
        }
        try OpenSSLCall.check(status, "reading a P-256 public key")
        return try OpenSSLCall.require(key, "reading a P-256 public key")
    }

    static func uncompressedFromDER(of key: OpaquePointer) throws(CryptoError) -> Data {
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(key, &output)
        guard length > 0, let output else { throw CryptoError(operation: "exporting a P-256 point", reason: OpenSSLCall.lastError()) }
        defer { CRYPTO_free(output, #fileID, #line) }
        let der = Array(UnsafeBufferPointer(start: output, count: Int(length)))
        guard der.count == subjectPublicKeyInfoPrefix.count + 65, Array(der.prefix(subjectPublicKeyInfoPrefix.count)) == subjectPublicKeyInfoPrefix else {
            throw CryptoError(operation: "exporting a P-256 point", reason: "not an uncompressed P-256 key")
        }
        return Data(der.suffix(65))
    }
}
