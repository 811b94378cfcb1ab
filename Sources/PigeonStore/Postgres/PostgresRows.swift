/// The rows of a result, copied out of libpq in text format.
public struct PostgresRows: Sendable {
    public var columns: [String]
    public var rows: [[String?]]
    /// Rows affected by an INSERT/UPDATE/DELETE.
    public var affected: Int

    public init(columns: [String] = [], rows: [[String?]] = [], affected: Int = 0) {
        self.columns = columns
        self.rows = rows
        self.affected = affected
    }

    public var isEmpty: Bool { rows.isEmpty }
    public var count: Int { rows.count }

    /// The single value of a one-row, one-column result.
    public var scalar: String? { rows.first?.first ?? nil }
}

extension Array where Element == String? {
    /// The column at `index` as text.
    public func text(_ index: Int) -> String? { self[index] }

    /// The column at `index` as an integer, `nil` if NULL or not a number.
    public func integer(_ index: Int) -> Int? { self[index].flatMap { Int($0) } }

    /// The column at `index` as a boolean (`t`/`f`).
    public func boolean(_ index: Int) -> Bool? { self[index].map { $0 == "t" } }
}

/// A value a column's text form decodes to (`Int64("42")`, `DeliveryState(rawValue: "SENT")`).
public protocol PostgresTextDecodable {
    init?(postgresText text: String)
}

extension String: PostgresTextDecodable {
    public init?(postgresText text: String) { self = text }
}

extension Int: PostgresTextDecodable {
    public init?(postgresText text: String) { self.init(text) }
}

extension Int64: PostgresTextDecodable {
    public init?(postgresText text: String) { self.init(text) }
}

extension Double: PostgresTextDecodable {
    public init?(postgresText text: String) { self.init(text) }
}

extension Bool: PostgresTextDecodable {
    public init?(postgresText text: String) {
        switch text {
        case "t": self = true
        case "f": self = false
        default: return nil
        }
    }
}

extension PostgresTextDecodable where Self: RawRepresentable, RawValue == String {
    public init?(postgresText text: String) { self.init(rawValue: text) }
}

extension Array where Element == String? {
    /// The column at `index` (named `column` in the error) as a `T`; throws when it is missing,
    /// NULL or not a `T`. The error never quotes the value (it may be a push token).
    public func decode<T: PostgresTextDecodable>(_ index: Int, _ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard let value = try decodeIfPresent(index, column, as: type) else {
            throw PostgresError(.unexpectedResult, "column \(column) is NULL where a \(T.self) was expected")
        }
        return value
    }

    /// The column at `index` as a `T`, nil when NULL; throws when it is missing or holds
    /// something that is not a `T`.
    public func decodeIfPresent<T: PostgresTextDecodable>(_ index: Int, _ column: String, as type: T.Type = T.self) throws(PostgresError) -> T? {
        guard indices.contains(index) else {
            throw PostgresError(.unexpectedResult, "column \(column) (\(index)) is missing: the row has \(count) columns")
        }
        guard let text = self[index] else { return nil }
        guard let value = T(postgresText: text) else {
            throw PostgresError(.unexpectedResult, "column \(column) does not hold a \(T.self)")
        }
        return value
    }
}
