import Foundation
import PigeonCore
import PigeonHTTP
import PigeonStore
import PostgresDriver
import Synchronization

/// `/health` (the process answers) and `/ready` (the database answers, its schema is current and
/// the gateway is not stopping).
struct HealthEndpoint: Sendable {
    /// The migrations the database still lacks; throws when it does not answer.
    let pendingMigrations: @Sendable () async throws -> [Int]
    /// Requested first thing in a stop: `/ready` answers 503 from then on, so a load
    /// balancer stops routing to it (CONTRACT §10).
    let stopping: GracefulStop
    let logger: Logger

    init(pendingMigrations: @escaping @Sendable () async throws -> [Int], stopping: GracefulStop = GracefulStop(), logger: Logger) {
        self.pendingMigrations = pendingMigrations
        self.stopping = stopping
        self.logger = logger
    }

    init(pool: PostgresPool, migrator: Migrator, stopping: GracefulStop, logger: Logger) {
        self.init(pendingMigrations: { try await migrator.pending(pool) }, stopping: stopping, logger: logger)
    }

    func live() -> HTTPResponse {
        .text(200, "{\"status\":\"UP\"}", contentType: "application/json")
    }

    func ready() async -> HTTPResponse {
        guard !stopping.isRequested else {
            return .text(503, "{\"status\":\"DOWN\",\"reason\":\"shutting down\"}", contentType: "application/json")
        }
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
