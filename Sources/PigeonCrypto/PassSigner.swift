internal import COpenSSL
import Foundation

/// Signs Wallet passes (CONTRACT §7, Apple's "Building a Pass"): `manifest.json`'s detached
/// PKCS#7 signature (DER, signing time included) made with a Pass Type ID certificate and its key
/// from a `.p12`, carrying the intermediate certificates (Apple's WWDR) so a device can build the
/// chain to Apple's root.
package final class PassSigner: @unchecked Sendable {
    // @unchecked: the certificate, key and chain are never changed after init; OpenSSL signs
    // with shared read-only keys and certificates from several threads.
    private let certificate: OpaquePointer
    private let key: OpaquePointer
    private let chain: OpaquePointer

    /// `p12`: the Pass Type ID certificate and key (and any intermediates it carries);
    /// `intermediatesPEM`: more intermediates to include (the WWDR certificate), PEM.
    package init(p12: Data, password: String?, intermediatesPEM: String? = nil) throws(CryptoError) {
        let bytes = [UInt8](p12)
        let bio = try OpenSSLCall.require(BIO_new_mem_buf(bytes, Int32(bytes.count)), "reading the pass certificate")
        defer { BIO_free(bio) }
        guard let archive = d2i_PKCS12_bio(bio, nil) else {
            throw CryptoError(operation: "reading the pass certificate (.p12)", reason: OpenSSLCall.lastError())
        }
        defer { PKCS12_free(archive) }
        var key: OpaquePointer?
        var certificate: OpaquePointer?
        var carried: OpaquePointer?
        guard PKCS12_parse(archive, password ?? "", &key, &certificate, &carried) == 1, let key, let certificate else {
            throw CryptoError(operation: "opening the pass certificate (.p12): wrong password or damaged file", reason: OpenSSLCall.lastError())
        }
        let chain = carried ?? OPENSSL_sk_new_null()
        self.key = key
        self.certificate = certificate
        guard let chain else {
            EVP_PKEY_free(key)
            X509_free(certificate)
            throw CryptoError(operation: "reading the pass certificate", reason: "out of memory")
        }
        self.chain = chain
        if let intermediatesPEM {
            let pem = [UInt8](intermediatesPEM.utf8)
            let bio = try OpenSSLCall.require(BIO_new_mem_buf(pem, Int32(pem.count)), "reading the WWDR certificate")
            defer { BIO_free(bio) }
            var added = 0
            while let intermediate = PEM_read_bio_X509(bio, nil, nil, nil) {
                OPENSSL_sk_push(chain, UnsafeRawPointer(intermediate))
                added += 1
            }
            ERR_clear_error()  // the end of the PEM text is reported as an error
            guard added > 0 else { throw CryptoError(operation: "reading the WWDR certificate", reason: "no PEM certificate in it") }
        }
        guard X509_check_private_key(certificate, key) == 1 else {
            throw CryptoError(operation: "opening the pass certificate (.p12)", reason: "the key does not belong to the certificate")
        }
    }

    deinit {
        while let element = OPENSSL_sk_pop(chain) { X509_free(OpaquePointer(element)) }
        OPENSSL_sk_free(chain)
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// The detached signature of `manifest`, DER.
    package func sign(_ manifest: Data) throws(CryptoError) -> Data {
        let bytes = [UInt8](manifest)
        let input = try OpenSSLCall.require(BIO_new_mem_buf(bytes, Int32(bytes.count)), "signing the manifest")
        defer { BIO_free(input) }
        guard let signature = PKCS7_sign(certificate, key, chain, input, Int32(PKCS7_DETACHED | PKCS7_BINARY)) else {
            throw CryptoError(operation: "signing the manifest", reason: OpenSSLCall.lastError())
        }
        defer { PKCS7_free(signature) }
        let output = try OpenSSLCall.require(BIO_new(BIO_s_mem()), "signing the manifest")
        defer { BIO_free(output) }
        try OpenSSLCall.check(i2d_PKCS7_bio(output, signature), "encoding the signature")
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(output, BIO_CTRL_INFO, 0, &pointer)
        guard let pointer, length > 0 else { throw CryptoError(operation: "encoding the signature", reason: "empty") }
        return Data(bytes: pointer, count: length)
    }

    /// SHA-1 of `data` in lower-case hexadecimal: what `manifest.json` lists per file.
    package static func sha1Hex(_ data: Data) throws(CryptoError) -> String {
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        let done = data.withUnsafeBytes { SHA1($0.bindMemory(to: UInt8.self).baseAddress, data.count, &digest) != nil }
        guard done else { throw CryptoError(operation: "hashing a pass file (SHA-1)", reason: "OpenSSL failed") }
        return digest.map { String(format: "%02x", $0) }.joined()
    }
}
