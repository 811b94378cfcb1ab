import Foundation
import PigeonCore
import PigeonStore
import PostgresDriver

/// The PostgreSQL database integration tests run against, named by the environment variable
/// `PIGEON_TEST_DATABASE_URL` (`scripts/test.sh` starts one and sets it). Tests share the
/// database and keep apart by using ``unique(_:)`` ids.
package enum TestDatabase {
    package static let environmentVariable = "PIGEON_TEST_DATABASE_URL"

    /// The database URL, if the environment names one.
    package static var url: String? { ProcessInfo.processInfo.environment[environmentVariable] }

    /// Whether database tests can run: a database is named and the tier includes integration.
    package static var isAvailable: Bool { url != nil && TestTier.runsIntegration }

    /// The statement timeout of the tests' own pools: 120 s, not production's 30 s default. The
    /// integration tier starts all its suites at once on two cores, and CI's run of it once
    /// stretched a 0.2 s statement past 30 s; no test asserts the default (the ones about the
    /// limit make pools of their own), so the tests' pools only keep a runaway statement bounded.
    package static let statementTimeoutMilliseconds = 120_000

    /// A pool of `size` connections on `url` with the tests' statement timeout.
    static func pool(_ url: String, size: Int) throws -> PostgresPool {
        PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: url), size: size,
                                          statementTimeoutMilliseconds: statementTimeoutMilliseconds),
                     logger: .silent)
    }

    /// The repository's `migrations/` folder.
    package static var migrationsDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("migrations")
    }

    /// A new pool on the test database with every migration applied.
    package static func migratedPool(size: Int = 4) async throws -> PostgresPool {
        guard let url else {
            throw PostgresError(.badSettings, "\(environmentVariable) is not set; run scripts/test.sh")
        }
        let pool = try Self.pool(url, size: size)
        _ = try await Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(pool, logger: .silent)
        return pool
    }

    /// A pool on a database of its own (created now, migrated), for tests that must not see other
    /// tests' rows — the delivery queue claims whatever is due. `drop()` removes it.
    package static func isolatedDatabase() async throws -> (pool: PostgresPool, drop: @Sendable () async -> Void) {
        let database = try await isolatedDatabaseWithURL()
        return (database.pool, database.drop)
    }

    /// ``isolatedDatabase()`` with the database's URL, for starting a gateway on it.
    /// `migratedThrough`: apply only the migrations up to that version (a test of a later one).
    package static func isolatedDatabaseWithURL(migratedThrough: Int? = nil) async throws -> (pool: PostgresPool, url: String, drop: @Sendable () async -> Void) {
        guard let url else {
            throw PostgresError(.badSettings, "\(environmentVariable) is not set; run scripts/test.sh")
        }
        let name = "pigeon_isolated_" + UUID().uuidString.prefix(8).lowercased()
        let admin = try Self.pool(url, size: 1)
        _ = try await admin.withConnection { try $0.execute(script: "CREATE DATABASE \(name)") }
        let isolatedURL = try Self.url(url, naming: name)
        let pool = try Self.pool(isolatedURL, size: 4)
        let migrations = try Migration.load(from: migrationsDirectory).filter { $0.version <= migratedThrough ?? Int.max }
        _ = try await Migrator(migrations: migrations).migrate(pool, logger: .silent)
        return (pool, isolatedURL, {
            pool.close()
            _ = try? await admin.withConnection { try $0.execute(script: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
            admin.close()
        })
    }

    /// `url` (a `postgresql://` URI) naming `database` instead, its parameters kept: the test URL
    /// carries `?connect_timeout=…` (a loaded CI machine took longer than the gateway's 5 s
    /// default to start a backend), and every database derived from it must too.
    package static func url(_ url: String, naming database: String) throws(PostgresError) -> String {
        let location = url.prefix { $0 != "?" }
        let parameters = url.dropFirst(location.count)
        guard let scheme = ["postgresql://", "postgres://"].first(where: location.hasPrefix),
              let slash = location.dropFirst(scheme.count).firstIndex(of: "/") else {
            throw PostgresError(.badSettings, "\(environmentVariable) must be a postgresql:// URL naming a database")
        }
        return String(location[...slash]) + database + parameters
    }

    /// Runs a bulk script that fills a table for a test (hundreds of thousands of rows) without the
    /// pool's `statement_timeout`: on a loaded CI machine such a load outlasted the 30 s a
    /// gateway's own statements get. The connection's timeout is restored afterwards.
    package static func load(_ pool: PostgresPool, script: String) async throws {
        _ = try await pool.withConnection { connection in
            try connection.withoutStatementTimeout { try connection.execute(script: script) }
        }
    }

    /// An id no other test uses: `prefix-<random>`.
    package static func unique(_ prefix: String) -> String {
        "\(prefix)-\(UUID().uuidString.prefix(12).lowercased())"
    }
}
