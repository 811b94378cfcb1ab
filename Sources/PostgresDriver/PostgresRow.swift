import Foundation

/// One row of a result, read by column name: `try row.decode("attempts", as: Int.self)`. A
/// column that is missing, NULL where a value is required, or not of the type asked for throws a
/// ``PostgresError`` naming the column and never quoting the value (it may be a push token).
/// Name every computed column in the statement (`… AS sent_at`): libpq names it after the
/// function otherwise. A name is found by comparing it with the result's few column names in
/// order (no hashing: a statement names a dozen columns at most, and rows are read by the
/// thousand); the first of two alike is the one read.
package struct PostgresRow: Sendable {
    private let columns: [String]
    private let values: [String?]

    init(columns: [String], values: [String?]) {
        self.columns = columns
        self.values = values
    }

    /// The column's value, which must not be NULL.
    package func decode<T: PostgresTextDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        try value(column, as: type)
    }

    /// The column's value, nil when NULL.
    package func decodeIfPresent<T: PostgresTextDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T? {
        try valueIfPresent(column, as: type)
    }
}

extension PostgresRows {
    /// The rows, each read by column name.
    package var named: [PostgresRow] {
        let columns = self.columns
        return rows.map { PostgresRow(columns: columns, values: $0) }
    }

    /// Each row made into a `T` by `make`; the first row that does not decode throws (no row is
    /// dropped unseen).
    package func decoded<T>(_ make: (PostgresRow) throws -> T) throws -> [T] {
        try named.map(make)
    }

    /// The first row made into a `T`, nil when there is none.
    package func decodedFirst<T>(_ make: (PostgresRow) throws -> T) throws -> T? {
        try rows.first.map { try make(PostgresRow(columns: columns, values: $0)) }
    }
}

/// An instant stored as seconds since 1970, as `extract(epoch FROM …)::double precision` reads it.
extension Date: PostgresTextDecodable {
    package init?(postgresText text: String) {
        guard let seconds = Double(text), seconds.isFinite else { return nil }
        self.init(timeIntervalSince1970: seconds)
    }
}

/// The column types the stores read most, as overloads chosen over the generic ``PostgresRow/decode(_:as:)``
/// where the type is one of these: each is the generic one specialised in this module, so a store
/// reading thousands of rows a second looks up no generic metadata at run time per column (the
/// generic form, called from another module, does: its `T?` is made at run time).
extension PostgresRow {
    package func decode(_ column: String, as type: String.Type = String.self) throws(PostgresError) -> String { try value(column, as: type) }
    package func decode(_ column: String, as type: Int.Type = Int.self) throws(PostgresError) -> Int { try value(column, as: type) }
    package func decode(_ column: String, as type: Int64.Type = Int64.self) throws(PostgresError) -> Int64 { try value(column, as: type) }
    package func decode(_ column: String, as type: Double.Type = Double.self) throws(PostgresError) -> Double { try value(column, as: type) }
    package func decode(_ column: String, as type: Bool.Type = Bool.self) throws(PostgresError) -> Bool { try value(column, as: type) }
    package func decode(_ column: String, as type: Date.Type = Date.self) throws(PostgresError) -> Date { try value(column, as: type) }
    package func decodeIfPresent(_ column: String, as type: String.Type = String.self) throws(PostgresError) -> String? { try valueIfPresent(column, as: type) }
    package func decodeIfPresent(_ column: String, as type: Int.Type = Int.self) throws(PostgresError) -> Int? { try valueIfPresent(column, as: type) }
    package func decodeIfPresent(_ column: String, as type: Int64.Type = Int64.self) throws(PostgresError) -> Int64? { try valueIfPresent(column, as: type) }
    package func decodeIfPresent(_ column: String, as type: Date.Type = Date.self) throws(PostgresError) -> Date? { try valueIfPresent(column, as: type) }

    /// The one body every `decode` shares (a name of its own: the overloads above would otherwise
    /// call themselves).
    private func value<T: PostgresTextDecodable>(_ column: String, as type: T.Type) throws(PostgresError) -> T {
        guard let value = try valueIfPresent(column, as: type) else {
            throw PostgresError(.unexpectedResult, "column \(column) is NULL where a \(T.self) was expected")
        }
        return value
    }

    /// The one body every `decodeIfPresent` shares.
    private func valueIfPresent<T: PostgresTextDecodable>(_ column: String, as type: T.Type) throws(PostgresError) -> T? {
        guard let index = columns.firstIndex(of: column) else {
            throw PostgresError(.unexpectedResult, "column \(column) is not in the result")
        }
        return try values.decodeIfPresent(index, column, as: type)
    }
}
