import Foundation
import PigeonCore
import PigeonTestSupport
@testable import PostgresDriver
import Testing
@testable import PigeonStore

@Suite("PostgreSQL pool: session settings (PostgreSQL)", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"))
struct PoolSessionSettingsTests {
    /// A statement PostgreSQL estimates as expensive (a cross join of series whose length the planner
    /// cannot see: ~10¹² rows estimated, 16 actual) — far past `jit_above_cost`.
    static let expensiveLooking = """
        EXPLAIN (ANALYZE, FORMAT JSON)
        WITH two AS MATERIALIZED (SELECT 2 AS n)
        SELECT count(*) FROM two, generate_series(1, two.n) a, generate_series(1, two.n) b, generate_series(1, two.n) c,
            generate_series(1, two.n) d
        WHERE a + b + c + d > 0
        """

    @Test("a pooled connection never JIT-compiles a statement, however expensive it looks")
    func noJITCompilation() async throws {
        let pool = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: try #require(TestDatabase.url)), size: 1),
                                logger: .silent)
        defer { pool.close() }
        let (setting, plan, available) = try await pool.withConnection { connection in
            (try connection.query(sql: "SELECT current_setting('jit')").scalar,
             try connection.query(sql: Self.expensiveLooking).scalar ?? "",
             try connection.query(sql: "SELECT pg_jit_available()").scalar == "t")
        }
        #expect(setting == "off")
        #expect(!plan.contains("\"JIT\""), "the plan was JIT-compiled: \(plan.prefix(300))")
        // The statement does tempt the planner when JIT is allowed (where the server has it), so
        // the absence above is the setting's doing.
        if available {
            let tempted = try await pool.withConnection { connection in
                try connection.query(sql: "SELECT set_config('jit', 'on', false)")
                defer { _ = try? connection.query(sql: "SELECT set_config('jit', 'off', false)") }
                return try connection.query(sql: Self.expensiveLooking).scalar ?? ""
            }
            #expect(tempted.contains("\"JIT\""))
        }
    }

    @Test("a connection that replaces one the server ended has JIT off too")
    func replacedConnectionKeepsTheSetting() async throws {
        let settings = try PostgresConnectionSettings(url: try #require(TestDatabase.url))
        let pool = PostgresPool(configuration: .init(settings: settings, size: 1), logger: .silent)
        let other = PostgresPool(configuration: .init(settings: settings, size: 1), logger: .silent)
        defer { pool.close(); other.close() }
        let first = try #require(try await pool.withConnection { try $0.query(sql: "SELECT pg_backend_pid()").scalar })
        let ended = try await other.withConnection { try $0.query(sql: "SELECT pg_terminate_backend($1::int)", [first]).scalar }
        #expect(ended == "t")
        // The pool finds its connection gone (that job may fail) and opens another for the next.
        var answer: (pid: String?, jit: String?)?
        for _ in 0..<3 where answer == nil {
            answer = try? await pool.withConnection { (try $0.query(sql: "SELECT pg_backend_pid()").scalar, try $0.query(sql: "SELECT current_setting('jit')").scalar) }
        }
        let replaced = try #require(answer)
        #expect(replaced.pid != first)
        #expect(replaced.jit == "off")
    }
}
