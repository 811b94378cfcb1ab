/// The rows of a result, copied out of libpq in text format.
package struct PostgresRows: Sendable {
    package var columns: [String]
    package var rows: [[String?]]
    /// Rows affected by an INSERT/UPDATE/DELETE.
    package var affected: Int

    package init(columns: [String] = [], rows: [[String?]] = [], affected: Int = 0) {
        self.columns = columns
        self.rows = rows
        self.affected = affected
    }

    package var isEmpty: Bool { rows.isEmpty }
    package var count: Int { rows.count }

    /// The single value of a one-row, one-column result.
    package var scalar: String? { rows.first?.first ?? nil }

    /// The single value of a one-row result as a `T` — a count, a sum, an id a statement always
    /// answers; throws when there is no row, or the value is NULL or not a `T` (a bad answer is
    /// an error, never a zero). `what` names the value in the error.
    package func scalar<T: PostgresTextDecodable>(as type: T.Type, _ what: String) throws(PostgresError) -> T {
        guard let row = rows.first else { throw PostgresError(.unexpectedResult, "no row where \(what) was expected") }
        return try row.decode(0, what, as: type)
    }
}

extension Array where Element == String? {
    /// The column at `index` as text.
    package func text(_ index: Int) -> String? { self[index] }

    /// The column at `index` as an integer, `nil` if NULL or not a number.
    package func integer(_ index: Int) -> Int? { self[index].flatMap { Int($0) } }

    /// The column at `index` as a boolean (`t`/`f`).
    package func boolean(_ index: Int) -> Bool? { self[index].map { $0 == "t" } }
}

/// A value a column's text form decodes to (`Int64("42")`, `DeliveryState(rawValue: "SENT")`).
package protocol PostgresTextDecodable {
    init?(postgresText text: String)
}

extension String: PostgresTextDecodable {
    package init?(postgresText text: String) { self = text }
}

extension Int: PostgresTextDecodable {
    package init?(postgresText text: String) { self.init(text) }
}

extension Int64: PostgresTextDecodable {
    package init?(postgresText text: String) { self.init(text) }
}

extension Double: PostgresTextDecodable {
    package init?(postgresText text: String) { self.init(text) }
}

extension Bool: PostgresTextDecodable {
    package init?(postgresText text: String) {
        switch text {
        case "t": self = true
        case "f": self = false
        default: return nil
        }
    }
}

extension PostgresTextDecodable where Self: RawRepresentable, RawValue == String {
    package init?(postgresText text: String) { self.init(rawValue: text) }
}

extension Array where Element == String? {
    /// The column at `index` (named `column` in the error) as a `T`; throws when it is missing,
    /// NULL or not a `T`. The error never quotes the value (it may be a push token).
    package func decode<T: PostgresTextDecodable>(_ index: Int, _ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard let value = try decodeIfPresent(index, column, as: type) else {
            throw PostgresError(.unexpectedResult, "column \(column) is NULL where a \(T.self) was expected")
        }
        return value
    }

    /// The column at `index` as a `T`, nil when NULL; throws when it is missing or holds
    /// something that is not a `T`.
    package func decodeIfPresent<T: PostgresTextDecodable>(_ index: Int, _ column: String, as type: T.Type = T.self) throws(PostgresError) -> T? {
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
