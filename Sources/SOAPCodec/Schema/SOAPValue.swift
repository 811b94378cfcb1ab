import Foundation

/// A decoded (or to-be-encoded) value of an ``XSDType``.
package enum SOAPValue: Sendable, Equatable {
    case string(String)
    case int(Int32)
    case long(Int64)
    case boolean(Bool)
    /// The bytes of an `xs:base64Binary`.
    case bytes(Data)
    case record(SOAPRecord)
    /// A map in JAXB's form (`entry` elements of `key` and `value`) kept as pairs: encoded exactly
    /// like the equivalent records, at a fraction of their memory (a send's answer holds one entry
    /// per recipient, millions of them). Decoding produces records.
    case entries([MapEntry])
}

/// A key/value pair of a map, kept exactly as sent.
package struct MapEntry: Sendable, Equatable {
    package var key: String
    package var value: String

    package init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

/// The fields of a complex value, by field name; repeated fields hold several values in order.
package struct SOAPRecord: Sendable, Equatable {
    package var fields: [String: [SOAPValue]]

    package init(_ fields: [String: [SOAPValue]] = [:]) {
        self.fields = fields
    }

    /// Sets a single-valued field; `nil` removes it.
    package subscript(name: String) -> SOAPValue? {
        get { fields[name]?.first }
        set { fields[name] = newValue.map { [$0] } }
    }

    package func string(_ name: String) -> String? {
        if case .string(let value)? = self[name] { return value }
        return nil
    }

    package func strings(_ name: String) -> [String] {
        (fields[name] ?? []).compactMap { if case .string(let value) = $0 { value } else { nil } }
    }

    package func int(_ name: String) -> Int32? {
        if case .int(let value)? = self[name] { return value }
        return nil
    }

    package func boolean(_ name: String) -> Bool? {
        if case .boolean(let value)? = self[name] { return value }
        return nil
    }

    package func bytes(_ name: String) -> Data? {
        if case .bytes(let value)? = self[name] { return value }
        return nil
    }

    package func record(_ name: String) -> SOAPRecord? {
        if case .record(let value)? = self[name] { return value }
        return nil
    }

    package func records(_ name: String) -> [SOAPRecord] {
        (fields[name] ?? []).compactMap { if case .record(let value) = $0 { value } else { nil } }
    }
}
