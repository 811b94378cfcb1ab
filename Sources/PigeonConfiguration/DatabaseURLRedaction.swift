import Foundation

/// Database URLs made fit for logs and output.
package enum DatabaseURLRedaction {
    /// A database URL with every password form replaced: `user:password@`, `?password=…`,
    /// libpq's `password=…` keywords (quoted or not), and `sslpassword`.
    package static func redacted(_ url: String) -> String {
        var text = url
        if let schemeEnd = text.range(of: "://") {
            let rest = text[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "<redacted>")
            }
        }
        return text.replacingOccurrences(
            of: #"(?i)((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)"#, with: "$1<redacted>", options: .regularExpression)
    }
}
