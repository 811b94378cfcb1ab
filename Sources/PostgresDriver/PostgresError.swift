/// A failure talking to PostgreSQL, with the server's SQLSTATE when it sent one. The description
/// never includes connection passwords or parameter values.
package struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure; extensible through ``other``.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let description: String
        package static let connectionFailed = Code(description: "connection failed")
        package static let connectionLost = Code(description: "connection lost")
        package static let queryFailed = Code(description: "query failed")
        package static let badSettings = Code(description: "bad connection settings")
        package static let unexpectedResult = Code(description: "unexpected result")
        package static let poolClosed = Code(description: "pool closed")
        package static let overloaded = Code(description: "too many waiting queries")
        package static let migrationFailed = Code(description: "migration failed")
        package static func other(_ text: String) -> Code { Code(description: text) }
    }

    package var code: Code
    /// The server's five-character SQLSTATE, e.g. `23505` for a unique violation.
    package var sqlState: String?
    package var message: String
    /// The statement that failed (its text, never its parameters).
    package var query: String?

    package init(_ code: Code, _ message: String, sqlState: String? = nil, query: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.query = query
    }

    package var description: String {
        var text = "\(code): \(message)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        return text
    }

    /// True when the connection is gone and the work may be retried on a fresh one.
    package var isConnectionFailure: Bool {
        code == .connectionLost || code == .connectionFailed
            || (sqlState?.hasPrefix("08") ?? false) || sqlState == "57P01"
    }

    /// True for SQLSTATE 23505, a unique violation.
    package var isUniqueViolation: Bool { sqlState == "23505" }
}
