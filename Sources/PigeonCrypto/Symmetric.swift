internal import COpenSSL
import Foundation

/// HMAC-SHA-256, the building block of HKDF (RFC 5869) as RFC 8291 spells its steps out.
package enum HMACSHA256 {
    /// The 32-byte tag; throws when OpenSSL fails (its output buffer would otherwise stay zero,
    /// and every key derived from it the same).
    package static func authenticate(key: Data, data: Data) throws(CryptoError) -> Data {
        try authenticate(key: key, data: data) { key, data, output in
            var length: UInt32 = 32
            return HMAC(EVP_sha256(), key, Int32(key.count), data, data.count, output, &length) != nil && length == 32
        }
    }

    /// The same with `hmac` writing the 32-byte tag into its output and saying whether it did
    /// (OpenSSL's `HMAC`; a failing one in tests).
    static func authenticate(key: Data, data: Data,
                             hmac: ([UInt8], [UInt8], UnsafeMutablePointer<UInt8>) -> Bool) throws(CryptoError) -> Data {
        var output = [UInt8](repeating: 0, count: 32)
        let done = output.withUnsafeMutableBufferPointer { buffer in hmac(Array(key), Array(data), buffer.baseAddress!) }
        guard done else { throw CryptoError(operation: "HMAC-SHA-256", reason: "OpenSSL failed") }
        return Data(output)
    }
}

/// HKDF with SHA-256 (RFC 5869): extract with `salt`, expand with `info` to `length` bytes.
package enum HKDFSHA256 {
    package static func derive(salt: Data, inputKeyMaterial: Data, info: Data, length: Int) throws(CryptoError) -> Data {
        guard length > 0 && length <= 255 * 32 else { throw CryptoError(operation: "HKDF-SHA-256", reason: "gives 1 to 8160 bytes, not \(length)") }
        let pseudorandomKey = try HMACSHA256.authenticate(key: salt, data: inputKeyMaterial)
        var output = Data(), block = Data()
        var counter: UInt8 = 1
        while output.count < length {
            block = try HMACSHA256.authenticate(key: pseudorandomKey, data: block + info + [counter])
            output.append(block)
            counter += 1
        }
        return output.prefix(length)
    }
}

/// AES-128-GCM with a 12-byte nonce and a 16-byte tag appended to the ciphertext (aes128gcm).
package enum AES128GCM {
    /// `plaintext` sealed: ciphertext ‖ tag; `additionalData` is authenticated, not encrypted.
    package static func seal(_ plaintext: Data, key: Data, nonce: Data, additionalData: Data = Data()) throws(CryptoError) -> Data {
        guard key.count == 16, nonce.count == 12 else { throw CryptoError(operation: "encrypting", reason: "expected a 16-byte key and a 12-byte nonce") }
        let context = try OpenSSLCall.require(EVP_CIPHER_CTX_new(), "encrypting")
        defer { EVP_CIPHER_CTX_free(context) }
        let keyBytes = Array(key), nonceBytes = Array(nonce), input = Array(plaintext)
        try OpenSSLCall.check(EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), nil, keyBytes, nonceBytes), "encrypting")
        if !additionalData.isEmpty {
            let aad = Array(additionalData)
            var ignored: Int32 = 0
            try OpenSSLCall.check(EVP_EncryptUpdate(context, nil, &ignored, aad, Int32(aad.count)), "encrypting")
        }
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        try OpenSSLCall.check(EVP_EncryptUpdate(context, &output, &written, input, Int32(input.count)), "encrypting")
        var final: Int32 = 0
        try output.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in
            try OpenSSLCall.check(EVP_EncryptFinal_ex(context, buffer.baseAddress! + Int(written), &final), "encrypting")
        }
        let total = Int(written + final)
        var tag = [UInt8](repeating: 0, count: 16)
        try OpenSSLCall.check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, &tag), "encrypting")
        return Data(output.prefix(total) + tag)
    }

    /// The plaintext of `sealed` (ciphertext ‖ tag), or an error when the tag does not match.
    package static func open(_ sealed: Data, key: Data, nonce: Data, additionalData: Data = Data()) throws(CryptoError) -> Data {
        guard key.count == 16, nonce.count == 12, sealed.count >= 16 else { throw CryptoError(operation: "decrypting", reason: "malformed input") }
        let context = try OpenSSLCall.require(EVP_CIPHER_CTX_new(), "decrypting")
        defer { EVP_CIPHER_CTX_free(context) }
        let keyBytes = Array(key), nonceBytes = Array(nonce)
        let input = Array(sealed.prefix(sealed.count - 16))
        var tag = Array(sealed.suffix(16))
        try OpenSSLCall.check(EVP_DecryptInit_ex(context, EVP_aes_128_gcm(), nil, keyBytes, nonceBytes), "decrypting")
        if !additionalData.isEmpty {
            let aad = Array(additionalData)
            var ignored: Int32 = 0
            try OpenSSLCall.check(EVP_DecryptUpdate(context, nil, &ignored, aad, Int32(aad.count)), "decrypting")
        }
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        try OpenSSLCall.check(EVP_DecryptUpdate(context, &output, &written, input, Int32(input.count)), "decrypting")
        try OpenSSLCall.check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, &tag), "decrypting")
        var final: Int32 = 0
        let verified = output.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(context, $0.baseAddress! + Int(written), &final) }
        guard verified == 1 else { throw CryptoError(operation: "decrypting", reason: "the authentication tag does not match") }
        return Data(output.prefix(Int(written + final)))
    }
}

/// Random bytes from OpenSSL's generator.
package enum RandomBytes {
    package static func generate(_ count: Int) throws(CryptoError) -> Data {
        var bytes = [UInt8](repeating: 0, count: count)
        try OpenSSLCall.check(RAND_bytes(&bytes, Int32(count)), "generating random bytes")
        return Data(bytes)
    }
}
