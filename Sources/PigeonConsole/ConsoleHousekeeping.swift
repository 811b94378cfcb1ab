import PigeonCore

/// Keeps the audit trail to `auditRetentionDays`: once at start and then every hour, the entries
/// older than that are deleted (several gateways may do it; the deletes do not conflict).
package struct ConsoleHousekeeping: Sendable {
    let expireAudit: @Sendable () async throws -> Int
    let interval: Duration
    let logger: Logger

    package init(expireAudit: @escaping @Sendable () async throws -> Int, interval: Duration = .seconds(3600), logger: Logger) {
        self.expireAudit = expireAudit
        self.interval = interval
        self.logger = logger
    }

    /// Runs until `stop` is requested (or the task is cancelled).
    package func run(until stop: GracefulStop = GracefulStop()) async {
        while !stop.shouldStop {
            do {
                let removed = try await expireAudit()
                if removed > 0 { logger.info("audit trail kept to auditRetentionDays", metadata: ["removed": String(removed)]) }
            } catch {
                logger.warning("audit retention pass failed; retrying in an hour", metadata: ["error": "\(error)"])
            }
            await stop.sleep(for: interval)
        }
    }
}
