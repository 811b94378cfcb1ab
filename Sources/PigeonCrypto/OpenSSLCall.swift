internal import COpenSSL

/// The one place OpenSSL return codes become thrown errors, with the library's own reason.
enum OpenSSLCall {
    /// OpenSSL's queued reason for the last failure, clearing the queue.
    static func lastError() -> String {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? "unknown OpenSSL error" : reasons.joined(separator: "; ")
    }

    /// Throws unless `result` is 1 (OpenSSL's success).
    static func check(_ result: Int32, _ operation: String) throws(CryptoError) {
        guard result == 1 else { throw CryptoError(operation: operation, reason: lastError()) }
    }

    /// Throws when a constructor returned NULL.
    static func require<T>(_ value: T?, _ operation: String) throws(CryptoError) -> T {
        guard let value else { throw CryptoError(operation: operation, reason: lastError()) }
        return value
    }
}
