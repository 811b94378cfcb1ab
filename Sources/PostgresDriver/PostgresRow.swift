import Foundation

/// One row of a result, read by column name: `try row.decode("attempts", as: Int.self)`. A
/// column that is missing, NULL where a value is required, or not of the type asked for throws a
/// ``PostgresError`` naming the column and never quoting the value (it may be a push token).
/// Name every computed column in the statement (`… AS sent_at`): libpq names it after the
/// function otherwise.
package struct PostgresRow: Sendable {
    private let positions: [String: Int]
    private let values: [String?]

    init(positions: [String: Int], values: [String?]) {
        self.positions = positions
        self.values = values
    }

    /// The column's value, which must not be NULL.
    package func decode<T: PostgresTextDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard let value = try decodeIfPresent(column, as: type) else {
            throw PostgresError(.unexpectedResult, "column \(column) is NULL where a \(T.self) was expected")
        }
        return value
    }

    /// The column's value, nil when NULL.
    package func decodeIfPresent<T: PostgresTextDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T? {
        guard let index = positions[column] else {
            throw PostgresError(.unexpectedResult, "column \(column) is not in the result")
        }
        return try values.decodeIfPresent(index, column, as: type)
    }
}

extension PostgresRows {
    /// The rows, each read by column name.
    package var named: [PostgresRow] {
        let positions = self.positions
        return rows.map { PostgresRow(positions: positions, values: $0) }
    }

    /// Each column's index by name (the first of two alike).
    private var positions: [String: Int] {
        var positions: [String: Int] = [:]
        for (index, column) in columns.enumerated() where positions[column] == nil { positions[column] = index }
        return positions
    }

    /// Each row made into a `T` by `make`; the first row that does not decode throws (no row is
    /// dropped unseen).
    package func decoded<T>(_ make: (PostgresRow) throws -> T) throws -> [T] {
        try named.map(make)
    }

    /// The first row made into a `T`, nil when there is none.
    package func decodedFirst<T>(_ make: (PostgresRow) throws -> T) throws -> T? {
        try rows.first.map { try make(PostgresRow(positions: positions, values: $0)) }
    }
}

/// An instant stored as seconds since 1970, as `extract(epoch FROM …)::double precision` reads it.
extension Date: PostgresTextDecodable {
    package init?(postgresText text: String) {
        guard let seconds = Double(text), seconds.isFinite else { return nil }
        self.init(timeIntervalSince1970: seconds)
    }
}
