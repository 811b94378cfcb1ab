import Foundation
import Synchronization

/// How a gateway's long-lived parts start, roll back and stop, in one place.
///
/// Two shapes of part:
/// - **Resources** that hold threads, sockets or connections (listeners, database pools, HTTP/2
///   clients), opened one after another with ``open(_:_:quiesce:close:)``: each comes with how
///   to close it and, for a listener, how to stop accepting (its graceful phase). They close in
///   the reverse of the order they opened, so a part closes before what it uses.
/// - **Services** that work until the stop (the engines, sweeps, the outbox sender, samplers),
///   started together with ``start(_:)``. Each gets the lifecycle's ``GracefulStop``: once it is
///   requested a service claims and starts nothing more, finishes what it holds with its task
///   alive and returns. Cancellation is only the hard half, for what is still running when the
///   grace is over.
///
/// A start that fails half way calls ``rollBack()``: what was opened closes, nothing is left
/// running. A stop (``stop(grace:handBack:)``, awaited: no thread waits on a semaphore) has three
/// phases within one deadline: the graceful phase (``stopping`` is requested, resources stop
/// accepting new work, the services finish), the services still running are cancelled, then
/// the resources close, latest first. Adding a part is one `open` call or one service
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

    /// A part that works until the stop it is given is requested (or its task is cancelled).
    package struct Service: Sendable {
        package var name: String
        package var run: @Sendable (GracefulStop) async -> Void

        package init(_ name: String, _ run: @escaping @Sendable (GracefulStop) async -> Void) {
            self.name = name
            self.run = run
        }
    }

    private struct Resource: Sendable {
        var name: String
        var quiesce: (@Sendable () -> Void)?
        var close: @Sendable (Closing) async -> Void
    }

    private struct State {
        var resources: [Resource] = []
        var services: Task<Void, Never>?
        var closed = false
    }

    private let state = Mutex(State())
    private let logger: Logger
    /// Requested first thing in a stop (or a rollback): what `/ready` reads, and what the
    /// services watch.
    package let stopping = GracefulStop()

    package init(logger: Logger) {
        self.logger = logger
    }

    /// The names of the open resources, in the order they opened.
    package var openResources: [String] { state.withLock { $0.resources.map(\.name) } }

    /// Opens a resource with `open` and records how to quiesce and close it; `close` may block
    /// (join threads, wait for a C library): it runs on a thread of its own. What `open` throws
    /// leaves nothing recorded (the caller rolls back what opened before).
    @discardableResult
    package func open<Part: Sendable>(_ name: String, _ open: () throws -> Part,
                                      quiesce: (@Sendable (Part) -> Void)? = nil,
                                      close: @escaping @Sendable (Part, Closing) -> Void) throws -> Part {
        try self.open(name, open, quiesce: quiesce, awaitClose: { part, closing in
            await BlockingWork.run("pigeon-close") { close(part, closing) }
        })
    }

    /// ``open(_:_:quiesce:close:)`` for a resource whose close is awaited (it blocks no thread).
    @discardableResult
    package func open<Part: Sendable>(_ name: String, _ open: () throws -> Part,
                                      quiesce: (@Sendable (Part) -> Void)? = nil,
                                      awaitClose close: @escaping @Sendable (Part, Closing) async -> Void) throws -> Part {
        let part = try open()
        var quiesceThis: (@Sendable () -> Void)?
        if let quiesce { quiesceThis = { quiesce(part) } }
        let resource = Resource(name: name, quiesce: quiesceThis, close: { closing in await close(part, closing) })
        state.withLock { $0.resources.append(resource) }
        return part
    }

    /// Starts the services side by side. One that returns before the stop is logged: a
    /// service is meant to work until the stop.
    package func start(_ services: [Service]) {
        let (logger, stopping) = (logger, stopping)
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                for service in services {
                    group.addTask {
                        await service.run(stopping)
                        if !stopping.shouldStop {
                            logger.error("a background service stopped on its own", metadata: ["service": service.name])
                        }
                    }
                }
            }
        }
        state.withLock { $0.services = task }
    }

    /// Undoes a start that failed: the services (if any) are stopped and cancelled at once and
    /// every resource closes, latest first, abandoning what runs.
    package func rollBack() async {
        stopping.request()
        let services = state.withLock { $0.services }
        if let services {
            services.cancel()
            _ = await BoundedWait.value(withinSeconds: 5) { await services.value }
        }
        await closeResources(Closing(deadline: Date().addingTimeInterval(5), abandonRunning: true))
    }

    /// Stops everything within `grace` seconds: the graceful phase (``stopping`` requested, the
    /// resources quiesced) gives the services the time left less a reserve to finish; those
    /// still running are then cancelled and given a moment to return; then `handBack` runs (with
    /// whether the services finished and the deadline), then every resource closes, latest
    /// first. Returns whether the services finished in time. Nothing here blocks a thread of the
    /// cooperative pool: the waits are continuations, and the resources' closes (which join
    /// threads and wait for C libraries) run on a thread of their own.
    @discardableResult
    package func stop(grace: Double, handBack: @Sendable (_ servicesFinished: Bool, _ closing: Closing) async -> Void = { _, _ in }) async -> Bool {
        let deadline = Date().addingTimeInterval(grace)
        // Time kept back for handing work back, answering the last requests and closing.
        let reserve = min(3, grace / 4)
        let (resources, services) = state.withLock { ($0.resources, $0.services) }
        stopping.request()
        resources.forEach { $0.quiesce?() }
        var finished = true
        if let services {
            finished = await BoundedWait.value(withinSeconds: deadline.timeIntervalSinceNow - reserve) { await services.value } != nil
            if !finished {
                // The hard half: what is still running is cancelled, and gets a moment to return.
                services.cancel()
                _ = await BoundedWait.value(withinSeconds: reserve / 4) { await services.value }
            }
        }
        await handBack(finished, Closing(deadline: deadline.addingTimeInterval(-reserve / 2), abandonRunning: !finished))
        await closeResources(Closing(deadline: deadline, abandonRunning: !finished))
        return finished
    }

    /// Closes every resource once, latest first (the blocking closes each on a thread of its own).
    private func closeResources(_ closing: Closing) async {
        let resources = state.withLock { state -> [Resource] in
            guard !state.closed else { return [] }
            state.closed = true
            return state.resources
        }
        for resource in resources.reversed() {
            await resource.close(closing)
        }
    }
}
