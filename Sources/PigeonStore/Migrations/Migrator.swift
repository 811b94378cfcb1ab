import PigeonCore
import PostgresDriver

/// Applies pending migrations in order, each in its own transaction, and records them in
/// `schema_migrations` with a checksum. A session advisory lock makes several gateway processes
/// starting at once apply each migration exactly once.
///
/// Migrations run without the pool's `statement_timeout` (building an index on a big table takes
/// as long as it takes) but with a `lock_timeout`: a migration that would wait behind the running
/// gateways' locks fails cleanly instead of queueing every query behind its own lock request.
package struct Migrator: Sendable {
    /// An arbitrary constant naming Pigeon's migration lock.
    static let advisoryLockKey = "7013285714"

    package let migrations: [Migration]
    /// How long one migration may wait for a lock on a table it changes.
    package var lockTimeout: Duration

    package init(migrations: [Migration], lockTimeout: Duration = .seconds(10)) {
        self.migrations = migrations
        self.lockTimeout = lockTimeout
    }

    /// What `migrate` did.
    package struct Report: Sendable, Equatable {
        package var applied: [Int]
        package var alreadyApplied: Int
    }

    /// Applies every pending migration.
    package func migrate(_ pool: PostgresPool, logger: Logger) async throws -> Report {
        let migrations = self.migrations
        let report = try await pool.withConnection { connection in
            // Another process migrating may take long, and so may an index on a big table: no
            // statement limit here (the pooled session gets its own back afterwards).
            try connection.withoutStatementTimeout {
                try connection.query("SELECT pg_advisory_lock(\(Self.advisoryLockKey)::bigint)")
                defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey)::bigint)") }
                try Self.ensureTable(connection)
                let applied = try Self.appliedChecksums(connection)
                try Self.verify(migrations, against: applied, connection: connection)
                var newlyApplied: [Int] = []
                for migration in migrations where applied[migration.version] == nil {
                    do {
                        try connection.transaction { connection in
                            try connection.setTransactionLockTimeout(lockTimeout)
                            try connection.execute(script: migration.sql)
                            try connection.query(
                                "INSERT INTO schema_migrations (version, name, checksum) VALUES (\(String(migration.version)), \(migration.name), md5(\(migration.sql)))")
                        }
                    } catch let error as PostgresError {
                        throw PostgresError(
                            .migrationFailed, "migration \(migration.version)_\(migration.name) failed: \(error.message)",
                            sqlState: error.sqlState)
                    }
                    newlyApplied.append(migration.version)
                }
                return Report(applied: newlyApplied, alreadyApplied: applied.count)
            }
        }
        for version in report.applied {
            logger.notice("applied migration", metadata: ["version": String(version)])
        }
        return report
    }

    /// Versions in `migrations/` not yet recorded in the database.
    package func pending(_ pool: PostgresPool) async throws -> [Int] {
        let migrations = self.migrations
        return try await pool.withConnection(idempotent: true) { connection in
            let exists = try connection.query(sql: "SELECT to_regclass('schema_migrations') IS NOT NULL").scalar == "t"
            guard exists else { return migrations.map(\.version) }
            let applied = try Self.appliedChecksums(connection)
            return migrations.map(\.version).filter { applied[$0] == nil }
        }
    }

    private static func ensureTable(_ connection: PostgresConnection) throws {
        try connection.query(sql: """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version     integer     PRIMARY KEY,
                name        text        NOT NULL,
                checksum    text        NOT NULL,
                applied_at  timestamptz NOT NULL DEFAULT now()
            )
            """)
    }

    private static func appliedChecksums(_ connection: PostgresConnection) throws -> [Int: String] {
        let applied = try connection.query(sql: "SELECT version, checksum FROM schema_migrations").decoded { row in
            (try row.decode("version", as: Int.self), try row.decode("checksum", as: String.self))
        }
        return Dictionary(applied, uniquingKeysWith: { first, _ in first })
    }

    /// An applied migration whose file has since changed means the schema is not what the files
    /// say; refuse rather than guess.
    private static func verify(_ migrations: [Migration], against applied: [Int: String], connection: PostgresConnection) throws {
        for migration in migrations {
            guard let recorded = applied[migration.version] else { continue }
            let current = try connection.query("SELECT md5(\(migration.sql))").scalar
            if current != recorded {
                throw PostgresError(
                    .migrationFailed,
                    "migration \(migration.version)_\(migration.name) was changed after it was applied; restore the file or write a new migration")
            }
        }
    }
}
