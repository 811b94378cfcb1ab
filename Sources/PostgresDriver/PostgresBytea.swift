import Foundation

/// `bytea` values in PostgreSQL's text form (`\x` and hexadecimal digits), both ways, without a
/// formatter per byte: a Wallet pass is megabytes.
package enum PostgresBytea {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `data` as a `bytea` parameter.
    package static func encode(_ data: Data) -> String {
        var bytes = [UInt8](repeating: 0, count: 2 + 2 * data.count)
        bytes[0] = UInt8(ascii: "\\")
        bytes[1] = UInt8(ascii: "x")
        var position = 2
        data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            for byte in input {
                bytes[position] = digits[Int(byte >> 4)]
                bytes[position + 1] = digits[Int(byte & 0x0F)]
                position += 2
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A `bytea` column's text (`\x…`), or nil when it is not in that form.
    package static func decode(_ text: String) -> Data? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else { return nil }
        var data = Data(count: (utf8.count - 2) / 2)
        let valid = data.withUnsafeMutableBytes { (output: UnsafeMutableRawBufferPointer) -> Bool in
            var index = 2
            var position = 0
            while index < utf8.count {
                guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return false }
                output[position] = high << 4 | low
                index += 2
                position += 1
            }
            return true
        }
        return valid ? data : nil
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x61...0x66: digit - 0x61 + 10
        case 0x41...0x46: digit - 0x41 + 10
        default: nil
        }
    }
}
