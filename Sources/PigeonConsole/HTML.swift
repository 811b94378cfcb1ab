import Foundation
import PigeonDomain

/// Text made safe for HTML element content and quoted attribute values.
package enum HTML {
    package static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default:
                // Control characters (a phone's or a bank's) are shown, not interpreted.
                if character.value < 0x20 && character != "\n" && character != "\t" {
                    escaped += "\\u{\(String(character.value, radix: 16))}"
                } else {
                    escaped.unicodeScalars.append(character)
                }
            }
        }
        return escaped
    }

    /// A date in UTC, to the second.
    package static func date(_ date: Date?) -> String {
        guard let date else { return "—" }
        return date.formatted(Date.ISO8601FormatStyle().year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false).timeSeparator(.colon))
            .replacingOccurrences(of: "T", with: " ") + " UTC"
    }

    /// A URL query value.
    package static func query(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}

/// `application/x-www-form-urlencoded` bodies and query strings of the console's forms.
package enum FormFields {
    /// The fields of `body`, the first value of each name; nil when it is not form-encoded text.
    package static func parse(_ body: Data) -> [String: String]? {
        guard let text = String(data: body, encoding: .utf8) else { return nil }
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { return nil }
            let value = parts.count > 1 ? decode(parts[1]) : ""
            guard let value else { return nil }
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }

    /// A query's arguments, decoded.
    package static func query(_ arguments: [(name: String, value: String?)]) -> [String: String] {
        var fields: [String: String] = [:]
        for argument in arguments {
            guard let name = decode(Substring(argument.name)), fields[name] == nil else { continue }
            fields[name] = argument.value.flatMap { decode(Substring($0)) } ?? ""
        }
        return fields
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
