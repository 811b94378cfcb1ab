/// Encodes and decodes PostgreSQL's text form of one-dimensional `text[]` arrays, so a whole
/// list travels as one parameter (`unnest($1::text[])`).
package enum PostgresArray {
    /// `["a", "b\"c"]` → `{"a","b\"c"}`.
    package static func encode(_ values: [String]) -> String {
        encode(values.lazy.map(Optional.some), count: values.count)
    }

    /// Like ``encode(_:)-([String])`` with `nil` elements written as SQL NULL.
    package static func encode(_ values: [String?]) -> String {
        encode(values, count: values.count)
    }

    /// Works on UTF-8 bytes: only `"` and `\` need escaping inside quotes, and neither byte
    /// occurs inside a multi-byte character.
    private static func encode(_ values: some Sequence<String?>, count: Int) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(count * 16 + 2)
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            guard var value else {
                bytes.append(contentsOf: "NULL".utf8)
                continue
            }
            bytes.append(UInt8(ascii: "\""))
            value.withUTF8 { utf8 in
                // Most values need no escape: copied whole (a record's thousands of elements).
                guard utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                    bytes.append(contentsOf: utf8)
                    return
                }
                for byte in utf8 {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                    bytes.append(byte)
                }
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parses `{a,"b c",NULL}`; `NULL` elements become `nil`.
    package static func decode(_ text: String) -> [String?] {
        var scalars = Array(text.unicodeScalars)
        guard scalars.first == "{", scalars.last == "}" else { return [] }
        scalars = Array(scalars.dropFirst().dropLast())
        var values: [String?] = []
        var index = 0
        while index < scalars.count {
            var element = String.UnicodeScalarView()
            var quoted = false
            if scalars[index] == "\"" {
                quoted = true
                index += 1
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\\", index + 1 < scalars.count { index += 1 }
                    element.append(scalars[index])
                    index += 1
                }
                index += 1
            } else {
                while index < scalars.count, scalars[index] != "," {
                    element.append(scalars[index])
                    index += 1
                }
            }
            let text = String(element)
            values.append(!quoted && text == "NULL" ? nil : text)
            index += 1  // the comma
        }
        return values
    }
}
