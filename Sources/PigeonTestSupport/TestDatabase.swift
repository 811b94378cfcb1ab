import Foundation
import PigeonCore
import PigeonStore

/// The PostgreSQL database integration tests run against, named by the environment variable
/// `PIGEON_TEST_DATABASE_URL` (`scripts/test.sh` starts one and sets it). Tests share the
/// database and keep apart by using ``unique(_:)`` ids.
public enum TestDatabase {
    public static let environmentVariable = "PIGEON_TEST_DATABASE_URL"

    /// The database URL, if the environment names one.
    public static var url: String? { ProcessInfo.processInfo.environment[environmentVariable] }

    /// Whether integration tests can run.
    public static var isAvailable: Bool { url != nil }

    /// The repository's `migrations/` folder.
    public static var migrationsDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("migrations")
    }

    /// A new pool on the test database with every migration applied.
    public static func migratedPool(size: Int = 4) async throws -> PostgresPool {
        guard let url else {
            throw PostgresError(.badSettings, "\(environmentVariable) is not set; run scripts/test.sh")
        }
        let pool = PostgresPool(configuration: .init(settings: try PostgresConnectionSettings(url: url), size: size), logger: .silent)
        _ = try await Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(pool, logger: .silent)
        return pool
    }

    /// An id no other test uses: `prefix-<random>`.
    public static func unique(_ prefix: String) -> String {
        "\(prefix)-\(UUID().uuidString.prefix(12).lowercased())"
    }
}
