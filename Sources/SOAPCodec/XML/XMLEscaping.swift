/// Escapes text for XML content and attribute values.
enum XMLEscaping {
    static func escape(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "'") || $0 == 0x0D }) else {
            return text
        }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 16)
        for character in text.unicodeScalars {
            switch character {
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "&": escaped += "&amp;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            case "\r": escaped += "&#13;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
