import Foundation
import PigeonStore
@testable import PostgresDriver
import Testing
import PigeonTestSupport

/// Queries written by interpolation: values become numbered parameters in order, never SQL text.
@Suite("PostgresQuery: interpolated values are parameters", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PostgresQueryTests {
    @Test("each value is the next $n, bound in PostgreSQL's text form: strings, numbers, booleans, bytea, arrays, NULL")
    func placeholders() {
        let ids: [Int64] = [7, 8]
        let missing: String? = nil
        let query: PostgresQuery = """
            UPDATE t SET a = \("x"), b = \(42), c = \(true), d = \(Data([0xde, 0xad]))::bytea, e = \(missing), f = \(2.5)
            WHERE id = ANY(\(ids)::bigint[])
            """
        #expect(query.sql == """
            UPDATE t SET a = $1, b = $2, c = $3, d = $4::bytea, e = $5, f = $6
            WHERE id = ANY($7::bigint[])
            """)
        #expect(query.binds == ["x", "42", "true", "\\xdead", nil, "2.5", #"{"7","8"}"#])
    }

    @Test("data from outside never becomes SQL: a hostile string is a parameter; only literals and code-chosen fragments are written into the text")
    func hostileValues() {
        let hostile = "'; DROP TABLE devices; --"
        let column: StaticOrCodeSQL = "user_folded"
        let query: PostgresQuery = "SELECT id FROM devices WHERE \(sql: column) = \(hostile) LIMIT \(literal: 500)"
        #expect(query.sql == "SELECT id FROM devices WHERE user_folded = $1 LIMIT 500")
        #expect(query.binds == [hostile])
        let plain: PostgresQuery = "SELECT 1"
        #expect(plain.sql == "SELECT 1" && plain.binds.isEmpty)
    }
}
