import Foundation

/// A decoded (or to-be-encoded) value of an ``XSDType``.
public enum SOAPValue: Sendable, Equatable {
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
public struct MapEntry: Sendable, Equatable {
    public var key: String
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

/// The fields of a complex value, by field name; repeated fields hold several values in order.
public struct SOAPRecord: Sendable, Equatable {
    public var fields: [String: [SOAPValue]]

    public init(_ fields: [String: [SOAPValue]] = [:]) {
        self.fields = fields
    }

    /// Sets a single-valued field; `nil` removes it.
    public subscript(name: String) -> SOAPValue? {
        get { fields[name]?.first }
        set { fields[name] = newValue.map { [$0] } }
    }

    public func string(_ name: String) -> String? {
        if case .string(let value)? = self[name] { return value }
        return nil
    }

    public func strings(_ name: String) -> [String] {
        (fields[name] ?? []).compactMap { if case .string(let value) = $0 { value } else { nil } }
    }

    public func int(_ name: String) -> Int32? {
        if case .int(let value)? = self[name] { return value }
        return nil
    }

    public func boolean(_ name: String) -> Bool? {
        if case .boolean(let value)? = self[name] { return value }
        return nil
    }

    public func bytes(_ name: String) -> Data? {
        if case .bytes(let value)? = self[name] { return value }
        return nil
    }

    public func record(_ name: String) -> SOAPRecord? {
        if case .record(let value)? = self[name] { return value }
        return nil
    }

    public func records(_ name: String) -> [SOAPRecord] {
        (fields[name] ?? []).compactMap { if case .record(let value) = $0 { value } else { nil } }
    }
}
