/// The `key = value` lines of `server.conf`. Lines starting with `#` and blank lines are
/// ignored; a value may be wrapped in double quotes; `#` inside a value is kept (passwords may
/// contain it).
package struct ConfigurationFile: Sendable {
    /// One setting and where it came from.
    package struct Entry: Sendable, Equatable {
        package var key: String
        package var value: String
        package var location: String
    }

    package var entries: [Entry]

    /// Parses `text`; `name` is used in error locations.
    package init(text: String, name: String) throws(ConfigurationError) {
        var entries: [Entry] = []
        var seen: [String: String] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let location = "\(name):\(index + 1)"
            let line = rawLine.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigurationError(location: location, message: "expected 'key = value', got '\(line.prefix(60))'")
            }
            let key = line[..<equals].trimmingWhitespace()
            var value = line[line.index(after: equals)...].trimmingWhitespace()
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." || $0 == "-" }) else {
                throw ConfigurationError(location: location, message: "'\(key)' is not a valid key")
            }
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            if let earlier = seen[key] {
                throw ConfigurationError(location: location, message: "'\(key)' is already set at \(earlier)")
            }
            seen[key] = location
            entries.append(Entry(key: key, value: value, location: location))
        }
        self.entries = entries
    }
}

extension StringProtocol {
    package func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
