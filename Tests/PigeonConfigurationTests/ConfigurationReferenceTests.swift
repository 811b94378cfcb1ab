import Foundation
@testable import PigeonConfiguration
import Testing
import PigeonTestSupport

/// docs/configuration.md is the configuration reference: every key the parser knows is in its
/// table, every key in the table is one the parser knows, and every default written as a value
/// is the parser's (setting a key to its documented default changes nothing).
@Suite("Configuration reference", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct ConfigurationReferenceTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The table's rows: each key with its documented default (`nil` when the row gives none as a value).
    static func rows() throws -> [(key: String, defaultValue: String?)] {
        let text = try String(contentsOf: repository.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var rows: [(String, String?)] = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            let keys = cells[1].components(separatedBy: ", ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "`")) }
            let defaults = cells[2].components(separatedBy: ", ")
            for (index, key) in keys.enumerated() {
                let raw = keys.count == defaults.count ? defaults[index] : (keys.count == 1 ? cells[2] : nil)
                rows.append((key, raw.flatMap(literal)))
            }
        }
        return rows
    }

    /// A default written as a value: a number, `true`/`false`, or one backticked word.
    static func literal(_ text: String) -> String? {
        if text.range(of: #"^-?[0-9]+$"#, options: .regularExpression) != nil || text == "true" || text == "false" { return text }
        if text.range(of: #"^`[^` ]+`$"#, options: .regularExpression) != nil { return String(text.dropFirst().dropLast()) }
        return nil
    }

    static let base = "dbUrl = postgresql://127.0.0.1:5432/pigeon\n"

    /// The whole configuration as text, for comparing two of them (without which keys were read
    /// and where, which differ by construction).
    static func described(_ text: String) throws -> String {
        var configuration = try GatewayConfiguration.parse(text: text, name: "server.conf")
        configuration.keyLocations = [:]
        configuration.readValues = [:]
        var output = ""
        dump(configuration, to: &output)
        return output
    }

    @Test("every key the parser knows is in the reference, and the reference names no key it does not know")
    func keys() throws {
        let documented = Set(try Self.rows().map(\.key))
        let known = Set(GatewayConfiguration.keyNames)
        let patterns: Set<String> = ["app.<name>.<key>", "passType.<id>.certificatePath", "passType.<id>.password", "gcmAuthKey"]
        #expect(known.subtracting(documented).sorted() == [], "keys missing from docs/configuration.md")
        #expect(documented.subtracting(known).subtracting(patterns).sorted() == [], "docs/configuration.md names keys the parser does not know")
        #expect(documented.isSuperset(of: patterns))
    }

    /// Keys whose default is resolved where it is used (an unset endpoint), by that resolution.
    static let resolved: [String: @Sendable (GatewayConfiguration) -> String] = [
        "apnsSandboxEndpoint": { $0.defaultApp.apns.resolvedSandboxEndpoint },
        "rustoreEndpoint": { $0.defaultApp.rustore.resolvedEndpoint },
        "hmsEndpoint": { $0.defaultApp.huawei.resolvedEndpoint },
        "hmsTokenEndpoint": { $0.defaultApp.huawei.resolvedTokenEndpoint },
    ]

    @Test("every default the reference gives as a value is the parser's")
    func defaults() throws {
        let plain = try Self.described(Self.base)
        let unset = try GatewayConfiguration.parse(text: Self.base, name: "server.conf")
        let known = Set(GatewayConfiguration.keyNames)
        var checked = 0
        for (key, value) in try Self.rows() where key != "dbUrl" {
            // A default that names another key (`apnsConnections`: `pushConnections`) is not a value.
            guard let value, !known.contains(value) else { continue }
            checked += 1
            if let resolve = Self.resolved[key] {
                #expect(resolve(unset) == value, "\(key): the documented default \(value) is not the one used")
                continue
            }
            let configured: String
            do {
                configured = try Self.described(Self.base + "\(key) = \(value)\n")
            } catch {
                Issue.record("\(key) = \(value) (the documented default) is refused: \(error)")
                continue
            }
            let differences = zip(configured.split(separator: "\n"), plain.split(separator: "\n")).filter { $0 != $1 }.prefix(2)
            #expect(configured == plain, "\(key): the documented default \(value) is not the parser's: \(differences.map { "\($0.0) vs \($0.1)" })")
        }
        #expect(checked > 40, "the table's defaults were not read")
    }
}
