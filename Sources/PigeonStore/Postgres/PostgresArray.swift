/// Encodes and decodes PostgreSQL's text form of one-dimensional `text[]` arrays, so a whole
/// list travels as one parameter (`unnest($1::text[])`).
public enum PostgresArray {
    /// `["a", "b\"c"]` → `{"a","b\"c"}`.
    public static func encode(_ values: [String]) -> String {
        var out = "{"
        out.reserveCapacity(values.reduce(2) { $0 + $1.utf8.count + 3 })
        for (index, value) in values.enumerated() {
            if index > 0 { out += "," }
            out += "\""
            for character in value.unicodeScalars {
                if character == "\"" || character == "\\" { out += "\\" }
                out.unicodeScalars.append(character)
            }
            out += "\""
        }
        out += "}"
        return out
    }

    /// Like ``encode(_:)-([String])`` with `nil` elements written as SQL NULL.
    public static func encode(_ values: [String?]) -> String {
        var out = "{"
        for (index, value) in values.enumerated() {
            if index > 0 { out += "," }
            if let value {
                out += encode([value]).dropFirst().dropLast()
            } else {
                out += "NULL"
            }
        }
        out += "}"
        return out
    }

    /// Parses `{a,"b c",NULL}`; `NULL` elements become `nil`.
    public static func decode(_ text: String) -> [String?] {
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
