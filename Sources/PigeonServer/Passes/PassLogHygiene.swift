import Foundation
import PigeonCore
import PigeonStore

/// Drops what Wallets posted to `/v1/log` once it is a week old, hourly, a bounded batch at a time.
struct PassLogHygiene: Sendable {
    static let keptDays = 7
    let store: PassStore
    let logger: Logger

    func run() async {
        while !Task.isCancelled {
            do {
                var dropped = 0
                repeat {
                    dropped = try await store.dropLogs(olderThan: Self.keptDays)
                } while dropped > 0 && !Task.isCancelled
            } catch {
                if !Task.isCancelled { logger.warning("cannot drop old Wallet logs", metadata: ["error": "\(error)"]) }
            }
            try? await Task.sleep(for: .seconds(3600))
        }
    }
}
