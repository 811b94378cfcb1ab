import Foundation

/// A statement and its parameters written as one string: `"… WHERE id = \(id)"` is the SQL
/// `… WHERE id = $1` with `id` bound as a parameter, never spliced into the text. Values are
/// bound through ``PostgresBindable`` (text form, as every parameter travels); SQL the code
/// itself chose — a column picked by configuration, a literal `LIMIT` — is written with
/// `\(sql:)` or `\(literal:)`, which take no data.
///
///     try connection.query("SELECT state FROM devices WHERE id = ANY(\(ids)::bigint[]) LIMIT \(literal: 500)")
package struct PostgresQuery: Sendable, Equatable, ExpressibleByStringInterpolation {
    /// The SQL with `$1`, `$2`, … where the values were.
    package private(set) var sql: String
    /// The values, in the order of their placeholders; `nil` is SQL NULL.
    package private(set) var binds: [String?]

    package init(stringLiteral value: String) {
        sql = value
        binds = []
    }

    package init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
    }

    /// Builds a query's text and binds as the literal is read.
    package struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [String?] = []

        package init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + 4 * interpolationCount)
            binds.reserveCapacity(interpolationCount)
        }

        package mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        /// A value, bound as the next parameter.
        package mutating func appendInterpolation(_ value: some PostgresBindable) {
            bind(value.postgresText)
        }

        /// A value or SQL NULL, bound as the next parameter.
        package mutating func appendInterpolation(_ value: (some PostgresBindable)?) {
            bind(value?.postgresText)
        }

        /// A whole number written into the SQL (a `LIMIT` the planner must see); numbers only.
        package mutating func appendInterpolation(literal value: Int) {
            sql += String(value)
        }

        /// SQL the code chose (a column name from ``UserIdentifiers``), never data from outside.
        package mutating func appendInterpolation(sql fragment: StaticOrCodeSQL) {
            sql += fragment.text
        }

        private mutating func bind(_ text: String?) {
            binds.append(text)
            sql += "$\(binds.count)"
        }
    }
}

/// SQL text the code wrote as a string literal (``UserIdentifiers`` choosing between two column
/// names). Only a literal makes one: data never can.
package struct StaticOrCodeSQL: Sendable, ExpressibleByStringLiteral {
    package let text: String

    package init(stringLiteral value: StaticString) {
        text = "\(value)"
    }
}

/// A value that travels as a statement parameter, in PostgreSQL's text form.
package protocol PostgresBindable {
    var postgresText: String { get }
}

extension String: PostgresBindable {
    package var postgresText: String { self }
}

extension Int: PostgresBindable {
    package var postgresText: String { String(self) }
}

extension Int64: PostgresBindable {
    package var postgresText: String { String(self) }
}

extension Double: PostgresBindable {
    package var postgresText: String { String(self) }
}

extension Bool: PostgresBindable {
    package var postgresText: String { self ? "true" : "false" }
}

/// `bytea`, as `\x…`.
extension Data: PostgresBindable {
    package var postgresText: String { PostgresBytea.encode(self) }
}

/// A one-dimensional array (`text[]`; cast it in the SQL for other element types).
extension Array: PostgresBindable where Element: PostgresBindable {
    package var postgresText: String { PostgresArray.encode(map(\.postgresText)) }
}

extension PostgresConnection {
    /// Runs one statement written as a ``PostgresQuery``.
    @discardableResult
    package func query(_ query: PostgresQuery) throws(PostgresError) -> PostgresRows {
        try self.query(sql: query.sql, query.binds)
    }
}
