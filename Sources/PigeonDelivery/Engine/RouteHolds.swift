import Foundation
import PigeonCore
import Synchronization

/// Keeps one push service (a route: platform, app, environment) that is slow or failing from
/// holding a lane's room, so the other services' pushes keep flowing. A lane claims deliveries
/// without knowing their routes; once their devices are known, each is admitted or handed back:
///
/// - A route is *slow* while a push admitted for it has waited longer than `slowAfter` for its
///   answer, and for `memory` after a push of it answered that late or could not start in time.
/// - A slow route holds at most `cap` deliveries (the lane's pushes in flight); deliveries of it
///   beyond that are handed back to the queue, not held waiting in memory.
/// - A healthy route is never capped: one service's blast uses the whole lane.
///
/// Counts deliveries (one holds a room on each of its routes until it is decided), and the
/// pushes in flight per admission for their age. Driven by the engine's clock.
final class RouteHolds: Sendable {
    /// One admission's pushes to a route: when admitted, how many are still unanswered.
    private struct Opened {
        var since: Date
        var remaining: Int
    }

    private struct Route {
        var held = 0
        var opened: [Int: Opened] = [:]
        var lastSlow: Date?
        var slow = false
    }

    private struct State {
        var routes: [PushRoute: Route] = [:]
        var nextTicket = 0
    }

    /// An admission's pushes to one route, for ``answered(_:slow:now:)``.
    struct Ticket: Sendable {
        var route: PushRoute
        var id: Int
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
    private let state = Mutex(State())

    init(cap: Int, slowAfter: Duration, memoryFactor: Double = 5) {
        self.cap = max(1, cap)
        self.slowAfter = Self.seconds(slowAfter)
        memory = self.slowAfter * memoryFactor
    }

    /// Admits or refuses each claim given the routes of its pushes: refused when one of its
    /// routes is slow and already holds `cap` deliveries. Admitted claims hold a room on each
    /// of their routes until ``release(_:)``.
    func admit(_ claimRoutes: [Set<PushRoute>], now: Date) -> Admission {
        state.withLock { state in
            var admission = Admission(admitted: [], turnedSlow: [], recovered: [])
            var slow: [PushRoute: Bool] = [:]
            func isSlow(_ route: PushRoute) -> Bool {
                if let known = slow[route] { return known }
                let value = state.routes[route].map { self.isSlow($0, now: now) } ?? false
                slow[route] = value
                let was = state.routes[route]?.slow ?? false
                if value != was {
                    state.routes[route, default: Route()].slow = value
                    if value { admission.turnedSlow.append(route) } else { admission.recovered.append(route) }
                }
                return value
            }
            for routes in claimRoutes {
                let refused = routes.contains { isSlow($0) && (state.routes[$0]?.held ?? 0) >= cap }
                admission.admitted.append(!refused)
                guard !refused else { continue }
                for route in routes { state.routes[route, default: Route()].held += 1 }
            }
            return admission
        }
    }

    /// `pushes` admitted pushes to `route` go to its sender now.
    func opened(_ route: PushRoute, pushes: Int, now: Date) -> Ticket {
        state.withLock { state in
            let id = state.nextTicket
            state.nextTicket += 1
            state.routes[route, default: Route()].opened[id] = Opened(since: now, remaining: pushes)
            return Ticket(route: route, id: id)
        }
    }

    /// One push of `ticket` has its result; `slow` when it could not start in time or its
    /// answer took `slowAfter` or longer by its own measure.
    func answered(_ ticket: Ticket, slow: Bool, now: Date) {
        state.withLock { state in
            guard var route = state.routes[ticket.route], var opened = route.opened[ticket.id] else { return }
            if slow || now.timeIntervalSince(opened.since) >= slowAfter { route.lastSlow = now }
            opened.remaining -= 1
            route.opened[ticket.id] = opened.remaining > 0 ? opened : nil
            state.routes[ticket.route] = route
        }
    }

    /// A delivery admitted on `routes` is decided: its rooms are free.
    func release(_ routes: Set<PushRoute>) {
        state.withLock { state in
            for route in routes {
                guard var entry = state.routes[route] else { continue }
                entry.held = max(0, entry.held - 1)
                state.routes[route] = entry
            }
        }
    }

    /// Deliveries held on `route` now.
    func held(_ route: PushRoute) -> Int { state.withLock { $0.routes[route]?.held ?? 0 } }

    /// Whether `route` is slow at `now`.
    func isSlow(_ route: PushRoute, now: Date) -> Bool {
        state.withLock { state in state.routes[route].map { isSlow($0, now: now) } ?? false }
    }

    private func isSlow(_ route: Route, now: Date) -> Bool {
        if let last = route.lastSlow, now.timeIntervalSince(last) < memory { return true }
        return route.opened.values.contains { now.timeIntervalSince($0.since) >= slowAfter }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
