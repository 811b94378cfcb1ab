import Foundation
import PigeonCore
import PigeonDomain
import Synchronization

/// Keeps one push service (a route: platform, app, environment) that is slow or failing from
/// holding a lane's room, so the other services' pushes keep flowing. A lane claims deliveries
/// without knowing their routes; once their devices are known, each is admitted or handed back:
///
/// - A route is *slow* for `memory` after one of its pushes took `slowAfter` or longer to be
///   answered, or could not start within `slowAfter` (every stream held by pushes the service
///   does not answer).
/// - A slow route holds at most `cap` deliveries (the lane's pushes in flight); deliveries of it
///   beyond that are handed back to the queue, not held waiting in memory.
/// - A healthy route is never capped: one service's blast uses the whole lane.
///
/// Counts deliveries: one holds a room on each of its routes until it is decided. Driven by the
/// engine's clock.
final class RouteHolds: Sendable {
    private struct Route {
        var held = 0
        var lastSlow: Date?
        var slow = false
    }

    /// What ``admit(_:now:)`` decided.
    struct Admission: Equatable {
        /// For each claim, whether it was admitted (else: hand it back).
        var admitted: [Bool]
        /// Routes found slow that were healthy at the previous admission (for the log).
        var turnedSlow: [PushRoute]
        /// Routes healthy again that were slow at the previous admission.
        var recovered: [PushRoute]
    }

    let cap: Int
    let slowAfter: TimeInterval
    let memory: TimeInterval
    private let routes = Mutex<[PushRoute: Route]>([:])

    init(cap: Int, slowAfter: Duration, memoryFactor: Double = 5) {
        self.cap = max(1, cap)
        self.slowAfter = slowAfter.inSeconds
        memory = self.slowAfter * memoryFactor
    }

    /// Admits or refuses each claim given the routes of its pushes: refused when one of its
    /// routes is slow and already holds `cap` deliveries. Admitted claims hold a room on each
    /// of their routes until ``release(_:)``.
    func admit(_ claimRoutes: [Set<PushRoute>], now: Date) -> Admission {
        routes.withLock { routes in
            var admission = Admission(admitted: [], turnedSlow: [], recovered: [])
            var slow: [PushRoute: Bool] = [:]
            func isSlow(_ route: PushRoute) -> Bool {
                if let known = slow[route] { return known }
                let value = routes[route].map { self.isSlow($0, now: now) } ?? false
                slow[route] = value
                if value != (routes[route]?.slow ?? false) {
                    routes[route, default: Route()].slow = value
                    if value { admission.turnedSlow.append(route) } else { admission.recovered.append(route) }
                }
                return value
            }
            for claim in claimRoutes {
                let refused = claim.contains { isSlow($0) && (routes[$0]?.held ?? 0) >= cap }
                admission.admitted.append(!refused)
                guard !refused else { continue }
                for route in claim { routes[route, default: Route()].held += 1 }
            }
            return admission
        }
    }

    /// A push to `route` has its result: `slow` when it could not start in time or took
    /// `slowAfter` or longer to be answered.
    func answered(_ route: PushRoute, slow: Bool, now: Date) {
        guard slow else { return }
        routes.withLock { $0[route, default: Route()].lastSlow = now }
    }

    /// A delivery admitted on `routes` is decided: its rooms are free.
    func release(_ decided: Set<PushRoute>) {
        routes.withLock { routes in
            for route in decided {
                guard var holds = routes[route] else { continue }
                holds.held = max(0, holds.held - 1)
                routes[route] = holds
            }
        }
    }

    /// Deliveries held on `route` now.
    func held(_ route: PushRoute) -> Int { routes.withLock { $0[route]?.held ?? 0 } }

    /// Whether `route` is slow at `now`.
    func isSlow(_ route: PushRoute, now: Date) -> Bool {
        routes.withLock { routes in routes[route].map { isSlow($0, now: now) } ?? false }
    }

    private func isSlow(_ route: Route, now: Date) -> Bool {
        route.lastSlow.map { now.timeIntervalSince($0) < memory } ?? false
    }
}
