/// A metric family: its Prometheus name, type and help text. The families the gateway exports
/// are the static members in `Metric+Catalogue.swift`; nothing else creates one.
package struct Metric: Sendable, Hashable {
    /// The Prometheus type, which decides how the registry may record it.
    package enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    package let name: String
    package let kind: Kind
    package let help: String

    init(_ name: String, _ kind: Kind, _ help: String) {
        self.name = name
        self.kind = kind
        self.help = help
    }
}
