import Foundation
import Synchronization

/// How a gateway's long-lived parts start, roll back and stop, in one place.
///
/// Two shapes of part:
/// - **Resources** that hold threads, sockets or connections (listeners, database pools, HTTP/2
///   clients), opened one after another with ``open(_:_:quiesce:close:)``: each comes with how
///   to close it and, for a listener, how to stop accepting (its graceful phase). They close in
///   the reverse of the order they opened, so a part closes before what it uses.
/// - **Services** that work until cancelled (the engines, sweeps, the outbox sender, samplers),
///   started together with ``start(_:)``. Cancellation is their signal to finish what they hold
///   and return.
///
/// A start that fails half way calls ``rollBack()``: what was opened closes, nothing is left
/// running. A stop (``stop(grace:handBack:)``, awaited: no thread waits on a semaphore) has three
/// phases within one deadline: the
/// graceful phase (resources stop accepting new work), the services are cancelled and waited
/// for, then the resources close, latest first. Adding a part is one `open` call or one service
/// in the list; its rollback and stop follow.
package final class Lifecycle: Sendable {
    /// What a resource's close may take: the stop's deadline, and whether work still running
    /// is abandoned (the services did not finish in time, or a start is being rolled back).
    package struct Closing: Sendable {
        package var deadline: Date
        package var abandonRunning: Bool

        /// The seconds left before the deadline, less `kept` for what closes after this part, and
        /// at least `minimum`.
        package func seconds(keeping kept: Double = 0, atLeast minimum: Double = 0) -> Double {
            max(minimum, deadline.timeIntervalSinceNow - kept)
        }

        /// ``seconds(keeping:atLeast:)`` as a timeout of at least half a second.
        package func timeout(keeping kept: Double = 0) -> Duration {
            .milliseconds(Int(1000 * seconds(keeping: kept, atLeast: 0.5)))
        }
    }

    /// A part that works until its task is cancelled.
    package struct Service: Sendable {
        package var name: String
        package var run: @Sendable () async -> Void

        package init(_ name: String, _ run: @escaping @Sendable () async -> Void) {
            self.name = name
            self.run = run
        }
    }

    private struct Resource: Sendable {
        var name: String
        var quiesce: (@Sendable () -> Void)?
        var close: @Sendable (Closing) -> Void
    }

    private struct State {
        var resources: [Resource] = []
        var services: Task<Void, Never>?
        var closed = false
    }

    private let state = Mutex(State())
    private let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    /// The names of the open resources, in the order they opened.
    package var openResources: [String] { state.withLock { $0.resources.map(\.name) } }

    /// Opens a resource with `open` and records how to quiesce and close it. What `open` throws
    /// leaves nothing recorded (the caller rolls back what opened before).
    @discardableResult
    package func open<Part: Sendable>(_ name: String, _ open: () throws -> Part,
                                      quiesce: (@Sendable (Part) -> Void)? = nil,
                                      close: @escaping @Sendable (Part, Closing) -> Void) throws -> Part {
        let part = try open()
        adopt(name, part, quiesce: quiesce, close: close)
        return part
    }

    /// Records a resource that is already open.
    package func adopt<Part: Sendable>(_ name: String, _ part: Part, quiesce: (@Sendable (Part) -> Void)? = nil,
                                       close: @escaping @Sendable (Part, Closing) -> Void) {
        var quiesceThis: (@Sendable () -> Void)?
        if let quiesce { quiesceThis = { quiesce(part) } }
        let resource = Resource(name: name, quiesce: quiesceThis, close: { closing in close(part, closing) })
        state.withLock { $0.resources.append(resource) }
    }

    /// Starts the services side by side. One that returns before it is cancelled is logged: a
    /// service is meant to work until the stop.
    package func start(_ services: [Service]) {
        let logger = logger
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                for service in services {
                    group.addTask {
                        await service.run()
                        if !Task.isCancelled {
                            logger.error("a background service stopped on its own", metadata: ["service": service.name])
                        }
                    }
                }
            }
        }
        state.withLock { $0.services = task }
    }

    /// Undoes a start that failed: the services (if any) are cancelled and every resource closes,
    /// latest first, abandoning what runs.
    package func rollBack() async {
        let services = state.withLock { $0.services }
        if let services {
            services.cancel()
            _ = await BoundedWait.value(withinSeconds: 5) { await services.value }
        }
        await closeResources(Closing(deadline: Date().addingTimeInterval(5), abandonRunning: true))
    }

    /// Stops everything within `grace` seconds: the graceful phase, then the services are
    /// cancelled and given the time left less a reserve, then `handBack` runs (with whether the
    /// services finished and the deadline), then every resource closes, latest first. Returns
    /// whether the services finished in time. Nothing here blocks a thread of the cooperative
    /// pool: the waits are continuations, and the resources' closes (which join threads and wait
    /// for C libraries) run on a thread of their own.
    @discardableResult
    package func stop(grace: Double, handBack: @Sendable (_ servicesFinished: Bool, _ closing: Closing) async -> Void = { _, _ in }) async -> Bool {
        let deadline = Date().addingTimeInterval(grace)
        // Time kept back for handing work back, answering the last requests and closing.
        let reserve = min(3, grace / 4)
        let (resources, services) = state.withLock { ($0.resources, $0.services) }
        resources.forEach { $0.quiesce?() }
        services?.cancel()
        var finished = true
        if let services {
            finished = await BoundedWait.value(withinSeconds: deadline.timeIntervalSinceNow - reserve) { await services.value } != nil
        }
        await handBack(finished, Closing(deadline: deadline.addingTimeInterval(-reserve / 2), abandonRunning: !finished))
        await closeResources(Closing(deadline: deadline, abandonRunning: !finished))
        return finished
    }

    /// Closes every resource once, latest first, on a thread of its own.
    private func closeResources(_ closing: Closing) async {
        let resources = state.withLock { state -> [Resource] in
            guard !state.closed else { return [] }
            state.closed = true
            return state.resources
        }
        guard !resources.isEmpty else { return }
        await BlockingWork.run("pigeon-close") {
            for resource in resources.reversed() {
                resource.close(closing)
            }
        }
    }
}
