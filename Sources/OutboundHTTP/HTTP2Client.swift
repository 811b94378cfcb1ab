internal import CCurlShim
import Foundation
import PigeonCore
import Synchronization

/// An HTTP/2-over-TLS client on libcurl's multi interface: one thread drives every transfer,
/// many streams share each connection. Callers `await` a response; nothing blocks the
/// cooperative pool. This small interface is all the transports use, so the HTTP/2 stack can be
/// replaced (libcurl 7.88 has known HTTP/2 defects; see docs/push-services.md, HTTP/2 notes).
package final class HTTP2Client: Sendable {
    /// Connections, streams and TLS material.
    package struct Configuration: Sendable {
        package var maxConnections: Int
        package var maxStreamsPerConnection: Int
        package var timeout: Duration
        /// Extra CA bundle (PEM) for the servers' certificates.
        package var caFile: String?
        /// The certificate this client proves itself with (APNs certificate authentication, the
        /// bank's mutual TLS).
        package var clientCertificate: ClientCertificate?
        /// The driving thread's name (at most 15 bytes show in `/proc` and `top`).
        package var threadName: String
        /// Requests in flight at most, across the connections; `nil`: every stream of every
        /// connection. Batches wait for room (their requests' expiry checked as they start).
        package var maxInFlight: Int?
        /// How long the client keeps its finished transfers for reuse once nothing is in flight:
        /// after a blast they are freed, not held until the next one.
        package var idleTransfersKeptFor: Duration = .seconds(30)

        package init(maxConnections: Int = 2, maxStreamsPerConnection: Int = 500, timeout: Duration = .seconds(30), caFile: String? = nil,
                    clientCertificate: ClientCertificate? = nil, threadName: String = "pigeon-http2", maxInFlight: Int? = nil) {
            self.maxInFlight = maxInFlight
            self.maxConnections = maxConnections
            self.maxStreamsPerConnection = maxStreamsPerConnection
            self.timeout = timeout
            self.caFile = caFile
            self.clientCertificate = clientCertificate
            self.threadName = threadName
        }
    }

    /// A client certificate: a `.p12` bundle with its password, or PEM certificate and key files.
    package struct ClientCertificate: Sendable {
        package enum Format: Sendable { case p12, pem }
        package var path: String
        package var format: Format
        /// The PEM private key file (PEM format only).
        package var keyPath: String?
        package var password: String?

        package init(path: String, type format: Format = .p12, keyPath: String? = nil, password: String? = nil) {
            self.path = path
            self.format = format
            self.keyPath = keyPath
            self.password = password
        }
    }

    /// A completed exchange.
    package struct Response: Sendable {
        package var status: Int
        /// Response headers by lower-cased name (the ones asked for in ``send(_:url:wantHeaders:)``).
        package var headers: [String: String]
        package var body: Data
        /// 2 when the exchange used HTTP/2.
        package var httpVersion: Int
        /// From the transfer's start on the driving thread to its answer.
        package var duration: Duration = .zero
    }

    /// A transfer that did not complete: connection refused or reset, TLS failure, timeout,
    /// GOAWAY. `code` is libcurl's CURLcode.
    package struct TransportError: Error, CustomStringConvertible, Sendable {
        package var code: Int
        package var message: String
        package var description: String { "transport error \(code): \(message)" }
    }

    /// One request of a batch (``send(_:maxInFlight:onResponse:)``).
    package struct Request: Sendable {
        package var url: String
        /// Header lines, `name: value`.
        package var headerLines: [String]
        package var body: Data
        /// Response headers to return, by name.
        package var wantHeaders: [String]
        /// `POST` (the push services, the bank), `GET` (the body is not sent) or another method
        /// sending the body like a POST (`DELETE`).
        package var method: String
        /// When set, the request is not sent at or after this time: the moment the driving
        /// thread would hand it to a connection it is answered ``expiredCode`` instead, so a
        /// message whose time ran out while it waited for a stream never goes on the wire.
        package var notAfter: Date?

        package init(url: String, headerLines: [String], body: Data, wantHeaders: [String] = [], method: String = "POST",
                    notAfter: Date? = nil) {
            self.method = method
            self.url = url
            self.headerLines = headerLines
            self.body = body
            self.wantHeaders = wantHeaders
            self.notAfter = notAfter
        }

        /// True when the request must not be sent at `now`.
        func hasExpired(at now: Date) -> Bool { notAfter.map { $0 <= now } ?? false }
    }

    /// The ``TransportError/code`` of a request answered without being sent because its
    /// ``Request/notAfter`` had passed.
    package static let expiredCode = -2
    static let expired = TransportError(code: expiredCode, message: "not sent: its time ran out while it waited for a stream")
    /// The ``TransportError/code`` of a batch's request answered without being sent because the
    /// task that submitted the batch was cancelled before the request's turn came (a stop).
    package static let notStartedCode = -3
    static let notStarted = TransportError(code: notStartedCode, message: "not sent: the sender stopped before its turn came")

    /// Where a finished transfer's result goes: one waiting caller, or one entry of a batch.
    private enum Completion {
        case single(CheckedContinuation<Response, any Error>)
        case batch(Batch, index: Int)
    }

    private final class Pending: @unchecked Sendable {
        // @unchecked: built on the caller's thread, then touched only by the driving thread.
        let request: Request
        /// False for requests that must never be sent twice: no restart, no reused connection.
        let idempotent: Bool
        let completion: Completion
        /// A single request's caller's cancellation.
        let cancellation: RequestCancellation?
        /// Times this transfer was started again after its connection failed under it.
        var restarts = 0
        /// When the driving thread first started it.
        var started: ContinuousClock.Instant?
        /// Its transfer while one is on the wire (the driving thread's, for abandoning it).
        var transfer: OpaquePointer?

        init(request: Request, idempotent: Bool, completion: Completion, cancellation: RequestCancellation? = nil) {
            self.request = request
            self.idempotent = idempotent
            self.completion = completion
            self.cancellation = cancellation
        }

        /// Whether its caller was cancelled.
        var isCancelled: Bool { cancellation?.isCancelled ?? false }

        func complete(_ result: Result<Response, TransportError>) {
            switch completion {
            case .single(let continuation) where isCancelled: continuation.resume(throwing: CancellationError())
            case .single(let continuation): continuation.resume(with: result.mapError { $0 as any Error })
            case .batch(let batch, let index): batch.complete(index, result)
            }
        }
    }

    /// A single request's cancellation: set by its caller's cancellation handler, which then hands
    /// the request (when already submitted) to the driving thread to end.
    private final class RequestCancellation: Sendable {
        // The request is an @unchecked Sendable the driving thread owns; it is only handed on here.
        private let state = Mutex<(cancelled: Bool, pending: Pending?)>((false, nil))

        var isCancelled: Bool { state.withLock { $0.cancelled } }

        /// Records the submitted request; false when the caller was cancelled already.
        func attach(_ pending: Pending) -> Bool {
            state.withLock { state in
                guard !state.cancelled else { return false }
                state.pending = pending
                return true
            }
        }

        /// Marks the caller cancelled; returns its request when one was submitted.
        func cancel() -> Pending? {
            state.withLock { state in
                state.cancelled = true
                defer { state.pending = nil }
                return state.pending
            }
        }
    }

    /// A batch submitted at once: the driving thread starts up to `maxInFlight` of its requests,
    /// and the next one each time one finishes. One continuation for the whole batch.
    private final class Batch: @unchecked Sendable {
        // @unchecked: built on the caller's thread, then touched only by the driving thread.
        let requests: [Request]
        let maxInFlight: Int
        let onResponse: @Sendable (Int, Result<Response, TransportError>) -> Void
        let continuation: CheckedContinuation<Void, Never>
        /// Set from any thread when the submitting task is cancelled; the driving thread then
        /// starts none of the requests still waiting.
        let cancelled: CancellationFlag
        var next = 0
        var inFlight = 0
        var finished = 0
        /// Requests answered ``HTTP2Client/expired`` while they waited, before their turn came.
        private var answeredEarly: Set<Int> = []
        /// The earliest ``Request/notAfter`` among the requests not started yet (a lower bound).
        private var earliestNotAfter: Date?

        init(requests: [Request], maxInFlight: Int, onResponse: @escaping @Sendable (Int, Result<Response, TransportError>) -> Void,
             continuation: CheckedContinuation<Void, Never>, cancelled: CancellationFlag) {
            self.cancelled = cancelled
            self.requests = requests
            self.maxInFlight = max(1, maxInFlight)
            self.onResponse = onResponse
            self.continuation = continuation
            earliestNotAfter = requests.lazy.compactMap(\.notAfter).min()
        }

        /// Answers ``HTTP2Client/expired`` to every request still waiting for its turn whose time
        /// has run out: a request behind streams that do not free (a service that stopped
        /// answering) comes back when its time is up, not when a stream finally frees.
        func expireWaiting(now: Date) {
            guard let earliest = earliestNotAfter, earliest <= now else { return }
            var nextEarliest: Date?
            var answered = false
            for index in next..<requests.count where !answeredEarly.contains(index) {
                guard let notAfter = requests[index].notAfter else { continue }
                if notAfter <= now {
                    answeredEarly.insert(index)
                    finished += 1
                    answered = true
                    onResponse(index, .failure(HTTP2Client.expired))
                } else {
                    nextEarliest = min(nextEarliest ?? notAfter, notAfter)
                }
            }
            earliestNotAfter = nextEarliest
            // Only the answer that completes the batch resumes its caller (a batch finished by
            // its last transfer was resumed there).
            if answered && finished == requests.count { continuation.resume() }
        }

        /// The requests to start now, within the batch's window and at most `room` of them.
        /// Requests whose time ran out are answered ``HTTP2Client/expired`` here, unsent.
        func startable(room: Int, now: Date) -> [Pending] {
            var pending: [Pending] = []
            while inFlight < maxInFlight && next < requests.count && pending.count < room {
                let index = next
                next += 1
                if answeredEarly.contains(index) { continue }
                inFlight += 1
                if requests[index].hasExpired(at: now) {
                    complete(index, .failure(HTTP2Client.expired))
                    continue
                }
                pending.append(Pending(request: requests[index], idempotent: true, completion: .batch(self, index: index)))
            }
            return pending
        }

        func complete(_ index: Int, _ result: Result<Response, TransportError>) {
            inFlight -= 1
            finished += 1
            onResponse(index, result)
            if finished == requests.count { continuation.resume() }
        }

        /// Answers every request not started yet with `error`.
        func failUnstarted(_ error: TransportError) {
            while next < requests.count {
                let index = next
                next += 1
                if answeredEarly.contains(index) { continue }
                inFlight += 1
                complete(index, .failure(error))
            }
        }

        var isDone: Bool { finished == requests.count }
    }

    private struct State {
        var submitted: [Pending] = []
        var submittedBatches: [Batch] = []
        var stopping = false
        var abandonRunning = false
        /// The multi handle is freed (the driving thread ended): nothing may wake it any more.
        var released = false
        /// Callers of ``close(abandonRunning:)`` waiting for the driving thread to end.
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        /// Single requests whose callers were cancelled, for the driving thread to end.
        var cancelledSingles: [Pending] = []
        var connectionsOpened = 0
        var restarted = 0
        var idleTransfers = 0
    }

    /// libcurl results that mean the connection failed under the stream (GOAWAY, RST_STREAM, a
    /// reset socket) rather than the server answering: CURLE_HTTP2, CURLE_GOT_NOTHING,
    /// CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2_STREAM.
    static let connectionFailures: Set<Int> = [16, 52, 55, 56, 92]
    /// How often one transfer is started again after such a failure before the error is returned.
    static let maximumRestarts = 2

    private let configuration: Configuration
    private let state = Mutex(State())
    // The multi handle belongs to the driving thread; other threads only wake it.
    private nonisolated(unsafe) let client: OpaquePointer
    private let stopped = DispatchSemaphore(value: 0)

    package init(configuration: Configuration) throws {
        // libcurl with CURLOPT_NOSIGNAL (needed with threads) leaves SIGPIPE to the application,
        // and OpenSSL writing to a connection the server closed raises it.
        ProcessSignals.ignoreBrokenPipes()
        guard let client = pigeon_h2_client_new(configuration.maxConnections, configuration.maxStreamsPerConnection) else {
            throw TransportError(code: -1, message: "cannot create the libcurl multi handle")
        }
        self.configuration = configuration
        self.client = client
        let name = configuration.threadName
        let thread = Thread { [self] in
            // Named from inside: Foundation does not pass a name given before start to the OS.
            pigeon_h2_name_current_thread(name)
            drive()
        }
        thread.start()
    }

    /// Connections opened so far (new ones replace connections closed by GOAWAY or errors).
    package var connectionsOpened: Int { state.withLock { $0.connectionsOpened } }

    /// Finished transfers kept for reuse, as of the client's last quiet moment (nothing in
    /// flight): each request takes one before a new one is made, at most 256 are kept, and none
    /// once the client has had nothing in flight for ``Configuration/idleTransfersKeptFor``.
    package var idleTransfers: Int { state.withLock { $0.idleTransfers } }

    /// Transfers started again because their connection failed under them (a GOAWAY, a reset
    /// stream). APNs and FCM treat a repeated request as the same push (same apns-id and
    /// collapse id), so restarting is safe.
    package var transfersRestarted: Int { state.withLock { $0.restarted } }

    /// POSTs `body` to `url` with `headers`; returns the response, or throws ``TransportError``.
    ///
    /// A request that is not `idempotent` (the server acts on it: a bank sending an SMS) is sent at
    /// most once: on a connection of its own, never started again after a connection failure;
    /// the caller gets the error and decides.
    ///
    /// Cancelling the calling task ends the request: one not started yet is never sent, one on
    /// the wire is abandoned (whether the server acted on it is unknown), and the caller gets
    /// `CancellationError`.
    package func send(url: String, method: String = "POST", headers: [String: String], body: Data, wantHeaders: [String] = [],
                     idempotent: Bool = true) async throws -> Response {
        let request = Request(url: url, headerLines: headers.map { "\($0.key): \($0.value)" }, body: body, wantHeaders: wantHeaders,
                              method: method)
        let cancellation = RequestCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let pending = Pending(request: request, idempotent: idempotent, completion: .single(continuation), cancellation: cancellation)
                guard cancellation.attach(pending) else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                if !submit({ $0.submitted.append(pending) }) {
                    continuation.resume(throwing: Self.shutDown)
                }
            }
        } onCancel: {
            guard let pending = cancellation.cancel() else { return }
            // Under the lock: the driving thread frees the handle under it too.
            state.withLock { state in
                guard !state.released else { return }
                state.cancelledSingles.append(pending)
                pigeon_h2_client_wakeup(client)
            }
        }
    }

    /// ``send(url:headers:body:wantHeaders:idempotent:)`` with the failure as a value, the form
    /// in which a batch's results come too.
    package func answer(url: String, headers: [String: String], body: Data, wantHeaders: [String] = []) async -> Result<Response, TransportError> {
        do {
            return .success(try await send(url: url, headers: headers, body: body, wantHeaders: wantHeaders))
        } catch let error as TransportError {
            return .failure(error)
        } catch {
            return .failure(TransportError(code: -1, message: "\(error)"))
        }
    }

    /// Sends a batch of idempotent requests as one submission: at most `maxInFlight` of them
    /// are in flight at once, `onResponse` gets each one's index and result on the driving
    /// thread as it finishes (it must be quick), and this returns when all are answered. No
    /// task or continuation per request.
    ///
    /// Cancelling the calling task stops the batch at once: the requests already on the wire
    /// finish and are answered as usual, the ones not started are answered ``notStartedCode``
    /// and never sent (a stopping gateway hands them back; CONTRACT §10).
    package func send(_ requests: [Request], maxInFlight: Int, onResponse: @escaping @Sendable (Int, Result<Response, TransportError>) -> Void) async {
        guard !requests.isEmpty else { return }
        let cancelled = CancellationFlag()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let batch = Batch(requests: requests, maxInFlight: maxInFlight, onResponse: onResponse, continuation: continuation,
                                  cancelled: cancelled)
                if !submit({ $0.submittedBatches.append(batch) }) {
                    batch.failUnstarted(Self.shutDown)
                }
            }
        } onCancel: {
            cancelled.set()
            // Under the lock: the driving thread frees the handle under it too.
            state.withLock { state in
                if !state.released { pigeon_h2_client_wakeup(client) }
            }
        }
    }

    private static let shutDown = TransportError(code: -1, message: "the HTTP/2 client is shut down")

    /// Hands work to the driving thread; false when the client is shut down. Only the first of a
    /// burst wakes the thread: it takes everything submitted by the time it looks, and a
    /// submission after that finds the lists empty again.
    private func submit(_ add: (inout State) -> Void) -> Bool {
        let (accepted, wake) = state.withLock { state in
            guard !state.stopping else { return (false, false) }
            let wasEmpty = state.submitted.isEmpty && state.submittedBatches.isEmpty
            add(&state)
            return (true, wasEmpty)
        }
        if wake { pigeon_h2_client_wakeup(client) }
        return accepted
    }

    /// Fails transfers not yet started, lets running ones finish (up to the timeout) or, with
    /// `abandonRunning`, fails them at once too, and stops the driving thread; returns once it
    /// has ended. Awaited: no thread waits (the gateway's lifecycle closes its clients this way).
    package func close(abandonRunning: Bool = false) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state -> Bool in
                if state.released { return true }
                state.closeWaiters.append(continuation)
                return false
            }
            if ended {
                continuation.resume()
            } else {
                requestStop(abandonRunning: abandonRunning)
            }
        }
    }

    /// ``close(abandonRunning:)`` for a caller that may block its thread (a command-line tool, a
    /// test's `defer`): the thread waits until the driving thread has ended.
    package func shutdown(abandonRunning: Bool = false) {
        guard requestStop(abandonRunning: abandonRunning) else { return }
        stopped.wait()
    }

    /// Tells the driving thread to stop; false when it was told already.
    @discardableResult
    private func requestStop(abandonRunning: Bool) -> Bool {
        let first = state.withLock { state in
            let first = !state.stopping
            state.stopping = true
            state.abandonRunning = state.abandonRunning || abandonRunning
            return first
        }
        guard first else { return false }
        state.withLock { state in
            if !state.released { pigeon_h2_client_wakeup(client) }
        }
        return true
    }

    /// The driving loop: add submitted transfers, advance all, complete finished ones.
    private func drive() {
        var running: Set<OpaquePointer> = []
        var connections = 0
        var idleTransfers = 0
        var quietSince: ContinuousClock.Instant?
        var timeoutMilliseconds = Int(configuration.timeout.components.seconds * 1000)
        if timeoutMilliseconds <= 0 { timeoutMilliseconds = 30_000 }
        var tls = TLSStrings(configuration)
        var batches: [Batch] = []
        var lastExpiryScan = Date.distantPast
        let capacity = max(1, min(configuration.maxInFlight ?? Int.max, configuration.maxConnections * configuration.maxStreamsPerConnection))
        while true {
            let (submitted, newBatches, cancelled, stopping, abandon) = state.withLock { state in
                let taken = (state.submitted, state.submittedBatches, state.cancelledSingles)
                state.submitted = []
                state.submittedBatches = []
                state.cancelledSingles = []
                return (taken.0, taken.1, taken.2, state.stopping, state.abandonRunning)
            }
            // Single requests whose callers were cancelled: those on the wire are abandoned
            // (those not started yet are answered as they would start, below).
            for pending in cancelled {
                guard let transfer = pending.transfer, running.contains(transfer) else { continue }
                pigeon_h2_client_abandon(client, transfer)
                running.remove(transfer)
                _ = finish(transfer, restartable: false)
            }
            batches += newBatches
            // Stopping: what a batch has not started yet is answered as shut down, like a
            // request submitted after shutdown.
            if stopping { batches.forEach { $0.failUnstarted(Self.shutDown) } }
            // A batch whose caller was cancelled starts nothing more.
            for batch in batches where batch.cancelled.isSet { batch.failUnstarted(Self.notStarted) }
            // Batches start no more than the connections can carry at once: a request waits in
            // its batch (where its expiry is checked as it starts), not in libcurl's queue.
            var startable = submitted
            let now = Date()
            if now.timeIntervalSince(lastExpiryScan) >= 0.05 {
                lastExpiryScan = now
                batches.forEach { $0.expireWaiting(now: now) }
            }
            for batch in batches {
                let room = capacity - running.count - startable.count
                if room <= 0 { break }
                startable += batch.startable(room: room, now: now)
            }
            for pending in startable {
                guard !pending.isCancelled else {
                    pending.complete(.failure(Self.notStarted))
                    continue
                }
                if let transfer = start(pending, tls: &tls, timeoutMilliseconds: timeoutMilliseconds) { running.insert(transfer) }
            }
            if stopping && abandon {
                for transfer in running {
                    pigeon_h2_client_abandon(client, transfer)
                    _ = finish(transfer, restartable: false)
                }
                running.removeAll()
            }
            batches.removeAll { $0.isDone }
            if stopping && running.isEmpty && batches.isEmpty { break }
            // libcurl 7.88 can leave a complete HTTP/2 response (HEADERS with END_STREAM, the
            // shape of APNs' success) in its buffers without a socket event to wake the poll;
            // while transfers are in flight, poll briefly so such a response waits 2 ms, not 100.
            _ = pigeon_h2_client_run(client, running.isEmpty ? 100 : 2)
            var restarts: [Pending] = []
            var finishedAny = !cancelled.isEmpty || (stopping && abandon)
            while let done = pigeon_h2_client_next_done(client) {
                finishedAny = true
                running.remove(done)
                if let again = finish(done, restartable: !stopping) { restarts.append(again) }
            }
            if !restarts.isEmpty {
                state.withLock { $0.restarted += restarts.count }
                let now = Date()
                for pending in restarts {
                    if pending.request.hasExpired(at: now) {
                        pending.complete(.failure(Self.expired))
                        continue
                    }
                    if let transfer = start(pending, tls: &tls, timeoutMilliseconds: timeoutMilliseconds) { running.insert(transfer) }
                }
            }
            // The kept transfers are looked after only while the client is quiet: nothing on
            // the busy path but the emptiness check.
            var idle = idleTransfers
            if running.isEmpty && batches.isEmpty {
                // Quiet since the last transfer finished: a request started and finished within
                // one pass leaves nothing running at either end, and must restart the count too.
                let now = ContinuousClock.now
                let since = finishedAny ? now : (quietSince ?? now)
                quietSince = since
                if now - since >= configuration.idleTransfersKeptFor { pigeon_h2_client_trim(client) }
                idle = Int(pigeon_h2_client_idle_transfers(client))
            } else {
                quietSince = nil
            }
            let opened = Int(pigeon_h2_client_connections_opened(client))
            if opened != connections || idle != idleTransfers {
                connections = opened
                idleTransfers = idle
                state.withLock { state in
                    state.connectionsOpened = opened
                    state.idleTransfers = idle
                }
            }
        }
        let waiters = state.withLock { state in
            state.released = true
            pigeon_h2_client_free(client)
            defer { state.closeWaiters.removeAll() }
            return state.closeWaiters
        }
        stopped.signal()
        waiters.forEach { $0.resume() }
    }

    /// Starts a transfer; nil (with the caller answered) when it could not be started.
    private func start(_ pending: Pending, tls: inout TLSStrings, timeoutMilliseconds: Int) -> OpaquePointer? {
        let context = Unmanaged.passRetained(pending)
        let request = pending.request
        if pending.started == nil { pending.started = ContinuousClock.now }
        // An idle transfer of the client's is taken when there is one (its handle's options kept
        // for a request of the same shape, reset for another), not a handle made anew.
        let (made, failure) = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { error -> (OpaquePointer?, String?) in
            error.initialize(repeating: 0)
            let transfer: OpaquePointer? = tls.withC { tlsPointer in
                CStrings.with(request.headerLines) { headerPointers in
                    request.body.withUnsafeBytes { body in
                        pigeon_h2_transfer_new(
                            client, request.method, request.url, headerPointers, request.headerLines.count,
                            body.bindMemory(to: UInt8.self).baseAddress, body.count, tlsPointer,
                            timeoutMilliseconds, pending.idempotent ? 0 : 1, context.toOpaque(), error.baseAddress, error.count)
                    }
                }
            }
            return (transfer, transfer == nil ? String(cString: error.baseAddress!) : nil)
        }
        guard let transfer = made else {
            context.release()
            pending.complete(.failure(TransportError(code: -1, message: failure ?? "cannot make the transfer")))
            return nil
        }
        let status = pigeon_h2_client_add(client, transfer)
        guard status == 0 else {
            pigeon_h2_transfer_free(transfer)
            context.release()
            pending.complete(.failure(TransportError(code: Int(status), message: "cannot add the transfer")))
            return nil
        }
        pending.transfer = transfer
        return transfer
    }

    /// Completes a finished transfer; returns it instead when its connection failed under it
    /// and it should be started again.
    private func finish(_ transfer: OpaquePointer, restartable: Bool) -> Pending? {
        // Kept for the next request (or freed): an address libcurl may give the next transfer.
        defer { pigeon_h2_client_recycle(client, transfer) }
        guard let raw = pigeon_h2_transfer_context(transfer) else { return nil }
        let pending = Unmanaged<Pending>.fromOpaque(raw).takeRetainedValue()
        // Recycled below: the address of the next transfer this client starts.
        pending.transfer = nil
        let code = Int(pigeon_h2_transfer_result(transfer))
        guard code == 0 else {
            if restartable && pending.idempotent && Self.connectionFailures.contains(code) && pending.restarts < Self.maximumRestarts {
                pending.restarts += 1
                return pending
            }
            pending.complete(.failure(TransportError(code: code, message: String(cString: pigeon_h2_transfer_error(transfer)))))
            return nil
        }
        var length = 0
        let body = pigeon_h2_transfer_body(transfer, &length).map { Data(bytes: $0, count: length) } ?? Data()
        var headers: [String: String] = [:]
        for name in pending.request.wantHeaders {
            if let value = pigeon_h2_transfer_header(transfer, name) { headers[name.lowercased()] = String(cString: value) }
        }
        pending.complete(.success(Response(
            status: Int(pigeon_h2_transfer_status(transfer)), headers: headers, body: body,
            httpVersion: Int(pigeon_h2_transfer_http_version(transfer)),
            duration: pending.started.map { ContinuousClock.now - $0 } ?? .zero)))
        return nil
    }
}

/// A one-way flag set from any thread (a task's cancellation handler) and read by the driving
/// thread.
private final class CancellationFlag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// The TLS settings as C strings kept alive for the driving thread's lifetime.
private struct TLSStrings {
    var caFile: [CChar]?
    var certificate: [CChar]?
    var key: [CChar]?
    var password: [CChar]?
    var type: [CChar]

    init(_ configuration: HTTP2Client.Configuration) {
        caFile = configuration.caFile.map { Array($0.utf8CString) }
        let client = configuration.clientCertificate
        certificate = client.map { Array($0.path.utf8CString) }
        key = client?.keyPath.map { Array($0.utf8CString) }
        password = client?.password.map { Array($0.utf8CString) }
        type = Array((client?.format == .pem ? "PEM" : "P12").utf8CString)
    }

    mutating func withC<R>(_ body: (UnsafePointer<pigeon_h2_tls>) -> R) -> R {
        caFile.withOptionalPointer { ca in
            certificate.withOptionalPointer { cert in
                key.withOptionalPointer { key in
                    password.withOptionalPointer { pass in
                        type.withUnsafeBufferPointer { type in
                            var tls = pigeon_h2_tls(ca_file: ca, client_cert: cert, client_cert_type: type.baseAddress, client_key: key, client_key_password: pass)
                            return body(&tls)
                        }
                    }
                }
            }
        }
    }
}

extension Optional where Wrapped == [CChar] {
    fileprivate func withOptionalPointer<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let array = self else { return body(nil) }
        return array.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}
