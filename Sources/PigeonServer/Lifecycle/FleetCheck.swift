import Foundation
import PigeonCore
import PigeonDomain
import PigeonStore

/// Warns, at start and hourly, about subscribed devices of routes (platform, app, environment)
/// this gateway does not serve, with how many: in a fleet whose configurations differ, another
/// gateway must serve them, or their deliveries wait and expire ("no gateway serves …").
struct FleetCheck: Sendable {
    let subscriptions: SubscriptionStore
    let served: Set<PushRoute>
    let logger: Logger
    var interval: Duration = .seconds(3600)

    /// Checks until `stop` is requested (or the task is cancelled).
    func run(until stop: GracefulStop = GracefulStop()) async {
        while !stop.shouldStop {
            await check()
            await stop.sleep(for: interval)
        }
    }

    /// The routes with devices this gateway does not serve, logged; returned for tests.
    @discardableResult
    func check() async -> [(route: PushRoute, devices: Int)] {
        do {
            let unserved = try await subscriptions.routeCounts().filter { !served.contains($0.route) }
            for (route, devices) in unserved {
                logger.warning("devices of a route this gateway does not serve: another gateway of the fleet must, or their deliveries expire", metadata: [
                    "route": "\(route)", "devices": String(devices)])
            }
            return unserved
        } catch {
            logger.warning("cannot count devices by route", metadata: ["error": "\(error)"])
            return []
        }
    }
}
