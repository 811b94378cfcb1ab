import Foundation
import PigeonCore
import PigeonHTTP
import PigeonStore

/// `/health` (the process answers) and `/ready` (the database answers and its schema is current).
struct HealthEndpoint: Sendable {
    /// The migrations the database still lacks; throws when it does not answer.
    let pendingMigrations: @Sendable () async throws -> [Int]
    let logger: Logger

    init(pendingMigrations: @escaping @Sendable () async throws -> [Int], logger: Logger) {
        self.pendingMigrations = pendingMigrations
        self.logger = logger
    }

    init(pool: PostgresPool, migrator: Migrator, logger: Logger) {
        self.init(pendingMigrations: { try await migrator.pending(pool) }, logger: logger)
    }

    func live() -> HTTPResponse {
        .text(200, "{\"status\":\"UP\"}", contentType: "application/json")
    }

    func ready() async -> HTTPResponse {
        do {
            let pending = try await pendingMigrations()
            guard pending.isEmpty else {
                return .text(503, "{\"status\":\"DOWN\",\"reason\":\"pending migrations: \(pending.map(String.init).joined(separator: ","))\"}", contentType: "application/json")
            }
            return .text(200, "{\"status\":\"UP\"}", contentType: "application/json")
        } catch {
            logger.warning("readiness check failed", metadata: ["error": "\(error)"])
            return .text(503, "{\"status\":\"DOWN\",\"reason\":\"database unreachable\"}", contentType: "application/json")
        }
    }
}
