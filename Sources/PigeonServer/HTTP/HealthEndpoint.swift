import Foundation
import PigeonCore
import PigeonHTTP
import PigeonStore

/// `/health` (the process answers) and `/ready` (the database answers and its schema is current).
struct HealthEndpoint: Sendable {
    let pool: PostgresPool
    let migrator: Migrator
    let logger: Logger

    func live() -> HTTPResponse {
        .text(200, "{\"status\":\"UP\"}", contentType: "application/json")
    }

    func ready() async -> HTTPResponse {
        do {
            let pending = try await migrator.pending(pool)
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
