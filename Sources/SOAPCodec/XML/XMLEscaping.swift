/// Escapes text for XML content and attribute values.
enum XMLEscaping {
    /// Escapes `<`, `>`, `&` and carriage returns (which parsers would otherwise normalise away).
    static func escape(_ text: String) -> String {
        escape(text, quotes: false)
    }

    /// Escapes for a double- or single-quoted attribute value.
    static func escapeAttribute(_ text: String) -> String {
        escape(text, quotes: true)
    }

    private static func escape(_ text: String, quotes: Bool) -> String {
        let needsWork = text.utf8.contains { byte in
            byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "&") || byte == 0x0D
                || (quotes && (byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'")))
        }
        guard needsWork else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 16)
        for character in text.unicodeScalars {
            switch character {
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "&": escaped += "&amp;"
            case "\r": escaped += "&#13;"
            case "\"" where quotes: escaped += "&quot;"
            case "'" where quotes: escaped += "&apos;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
