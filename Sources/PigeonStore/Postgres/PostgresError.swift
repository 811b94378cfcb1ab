/// A failure talking to PostgreSQL, with the server's SQLSTATE when it sent one. The description
/// never includes connection passwords or parameter values.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure; extensible through ``other``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let description: String
        public static let connectionFailed = Code(description: "connection failed")
        public static let connectionLost = Code(description: "connection lost")
        public static let queryFailed = Code(description: "query failed")
        public static let badSettings = Code(description: "bad connection settings")
        public static let unexpectedResult = Code(description: "unexpected result")
        public static let poolClosed = Code(description: "pool closed")
        public static let overloaded = Code(description: "too many waiting queries")
        public static let migrationFailed = Code(description: "migration failed")
        public static func other(_ text: String) -> Code { Code(description: text) }
    }

    public var code: Code
    /// The server's five-character SQLSTATE, e.g. `23505` for a unique violation.
    public var sqlState: String?
    public var message: String
    /// The statement that failed (its text, never its parameters).
    public var query: String?

    public init(_ code: Code, _ message: String, sqlState: String? = nil, query: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.query = query
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        return text
    }

    /// True when the connection is gone and the work may be retried on a fresh one.
    public var isConnectionFailure: Bool {
        code == .connectionLost || code == .connectionFailed
            || (sqlState?.hasPrefix("08") ?? false) || sqlState == "57P01"
    }

    /// True for SQLSTATE 23505, a unique violation.
    public var isUniqueViolation: Bool { sqlState == "23505" }
}
