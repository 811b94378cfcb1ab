internal import CHTTPShim
import Dispatch
import Foundation
import PigeonCore
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd's event-driven mode: a few epoll threads hold every
/// connection (thousands of idle keep-alive clients cost a socket and a little memory each, not a
/// thread), and each request's async handler runs on the server's own worker threads while its
/// connection is suspended.
///
/// What a client can make the server hold is bounded: connections in all and per client address,
/// the time to deliver a whole request (``Configuration/requestDeadlineSeconds``, which a client
/// trickling bytes cannot stretch), the head (16 KiB), and the body, whose limit the `admit`
/// closure chooses from the request's head before any body byte is buffered. HTTPS offers TLS 1.2
/// and 1.3 only, and can require client certificates signed by a given CA.
package final class HTTPServer: Sendable {
    /// How the server listens and what it bounds.
    package struct Configuration: Sendable {
        package var host: String
        package var port: UInt16
        /// Connections open at once, in all.
        package var connectionLimit: Int
        /// Connections open at once from one client address; 0 for no limit.
        package var perAddressConnectionLimit: Int
        /// A connection on which no byte moves this long (a stalled reader, say) is closed.
        package var idleTimeoutSeconds: Int
        /// Each whole request (head and body) must arrive within this, counted from when the
        /// server starts waiting for it; idle keep-alive connections are closed at that point too.
        package var requestDeadlineSeconds: Int
        /// Epoll threads holding the connections. libmicrohttpd splits the connection limit
        /// evenly between them while the kernel hands new connections to them unevenly, so with
        /// more than one the limit can bite early; handlers never run on these threads.
        package var ioThreads: Int
        /// Threads running the handlers (their budget; other listeners have their own).
        package var handlerThreads: Int
        /// Handlers running at once; further requests wait, their connections suspended, so a
        /// flood here queues in its own line rather than in front of shared resources (the
        /// database pool) that another listener needs.
        package var concurrentHandlers: Int
        package var tls: TLS?
        /// Connections not authenticated yet — no head with a verified client certificate (where
        /// one is required) and no request that ``BodyAdmission/acceptAuthenticated(maxBytes:)``
        /// admitted: at most this many at once, so authenticated connections keep the rest of the
        /// limit; 0 for no cap. When they are at the cap, a new connection makes room by cutting
        /// the oldest unauthenticated connection of the address holding the most.
        package var unauthenticatedLimit: Int
        /// The same per client address (an IPv6 client counted by its /64), beyond which a new
        /// connection is refused at accept; 0 for none.
        package var unauthenticatedPerAddressLimit: Int
        /// A connection that sent no head passing the checks this long after it opened is cut;
        /// 0: only the request deadline.
        package var unauthenticatedDeadlineSeconds: Int
        /// Client addresses served; any other is refused at accept, before anything is counted.
        /// Empty: every address.
        package var allowedClients: [IPNetwork] = []
        /// The request headers handlers read (lower case); no other header is copied out of the
        /// connection. The gateway's listeners take their router's (`Router.requestHeaders`).
        package var requestHeaders: Set<String> = Configuration.basicRequestHeaders
        /// What a plain handler reads: the body's type and length, credentials, the host.
        package static let basicRequestHeaders: Set<String> = ["content-type", "content-length", "authorization", "host"]

        package init(
            host: String = "127.0.0.1", port: UInt16 = 8080, connectionLimit: Int = 1024,
            perAddressConnectionLimit: Int = 0, idleTimeoutSeconds: Int = 30,
            requestDeadlineSeconds: Int = 30, ioThreads: Int = 1, handlerThreads: Int = 4,
            concurrentHandlers: Int = 256, tls: TLS? = nil, unauthenticatedLimit: Int = 0, unauthenticatedPerAddressLimit: Int = 0,
            unauthenticatedDeadlineSeconds: Int = 0, allowedClients: [IPNetwork] = [],
            requestHeaders: Set<String> = Configuration.basicRequestHeaders
        ) {
            self.allowedClients = allowedClients
            self.requestHeaders = Set(requestHeaders.map { $0.lowercased() })
            self.unauthenticatedLimit = unauthenticatedLimit
            self.unauthenticatedPerAddressLimit = unauthenticatedPerAddressLimit
            self.unauthenticatedDeadlineSeconds = unauthenticatedDeadlineSeconds
            self.host = host
            self.port = port
            self.connectionLimit = connectionLimit
            self.perAddressConnectionLimit = perAddressConnectionLimit
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.requestDeadlineSeconds = requestDeadlineSeconds
            self.ioThreads = ioThreads
            self.handlerThreads = handlerThreads
            self.concurrentHandlers = concurrentHandlers
            self.tls = tls
        }
    }

    /// PEM material for HTTPS.
    package struct TLS: Sendable {
        package var certificatePEM: String
        package var keyPEM: String
        /// When set, only clients presenting a certificate signed by this CA are served (403).
        package var clientCAPEM: String?

        package init(certificatePEM: String, keyPEM: String, clientCAPEM: String? = nil) {
            self.certificatePEM = certificatePEM
            self.keyPEM = keyPEM
            self.clientCAPEM = clientCAPEM
        }
    }

    /// How much body a request may send, decided from its head alone.
    package enum BodyAdmission: Sendable, Equatable {
        /// Read up to this many bytes; a declared larger body is answered at once with
        /// ``HTTPRequest/bodyTooLarge`` set, a chunked one that grows larger closes the connection.
        case accept(maxBytes: Int)
        /// As ``accept(maxBytes:)``, and the request carries valid credentials: its connection no
        /// longer counts among the unauthenticated ones.
        case acceptAuthenticated(maxBytes: Int)
        /// Read nothing: the handler answers from the head alone (e.g. 401 before a SOAP body).
        case refuse
        /// As ``refuse``, and the head carried wrong credentials: when its address (or the
        /// listener) needs room for a new unauthenticated connection, this one is cut first.
        case refuseWrongCredentials
    }

    /// Decides a request's body limit from its head. Runs on an I/O thread: it must be quick and
    /// never block.
    package typealias Admission = @Sendable (HTTPRequestHead) -> BodyAdmission
    /// Answers one request.
    package typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    /// Why the server could not start.
    package struct StartError: Error, CustomStringConvertible {
        package var description: String
    }

    /// The port actually bound (useful with port 0).
    package let port: UInt16
    private let context: Unmanaged<ExchangeContext>
    private let workers: WorkerThreads
    // The C server is only touched by `start`, `quiesce`, the counters and `stop`; the mutex keeps
    // them from racing `stop`.
    private let server: Mutex<OpaquePointer?>

    /// Binds and starts serving; returns once the socket listens.
    package init(configuration: Configuration, logger: Logger, admit: @escaping Admission, handler: @escaping Handler) throws {
        // TLS writes to a client that hung up raise SIGPIPE; it must not end the server.
        ProcessSignals.ignoreBrokenPipes()
        let workers = WorkerThreads(count: configuration.handlerThreads, name: "pigeon-http-\(configuration.port)")
        let context = Unmanaged.passRetained(ExchangeContext(
            admit: admit, handler: handler, logger: logger, workers: workers, limit: ConcurrencyLimit(configuration.concurrentHandlers),
            requestHeaders: configuration.requestHeaders))
        var started: OpaquePointer?
        var errorText = [CChar](repeating: 0, count: 256)
        let tls = configuration.tls
        let networks = configuration.allowedClients.map(\.cValue)
        let status = networks.withUnsafeBufferPointer { networks in configuration.host.withCString { host in
            withOptionalCString(tls?.certificatePEM) { certificate in
                withOptionalCString(tls?.keyPEM) { key in
                    withOptionalCString(tls?.clientCAPEM) { clientCA in
                        var config = pigeon_http_config(
                            address: host,
                            port: configuration.port,
                            io_threads: UInt32(clamping: configuration.ioThreads),
                            connection_limit: UInt32(clamping: configuration.connectionLimit),
                            per_address_limit: UInt32(clamping: configuration.perAddressConnectionLimit),
                            idle_timeout_seconds: UInt32(clamping: configuration.idleTimeoutSeconds),
                            request_deadline_seconds: UInt32(clamping: configuration.requestDeadlineSeconds),
                            unauthenticated_limit: UInt32(clamping: configuration.unauthenticatedLimit),
                            unauthenticated_per_address_limit: UInt32(clamping: configuration.unauthenticatedPerAddressLimit),
                            unauthenticated_deadline_seconds: UInt32(clamping: configuration.unauthenticatedDeadlineSeconds),
                            allowed_networks: networks.baseAddress,
                            allowed_network_count: networks.count,
                            tls_certificate_pem: certificate,
                            tls_key_pem: key,
                            tls_client_ca_pem: clientCA,
                            admit: admitTrampoline,
                            handler: exchangeTrampoline,
                            logger: logTrampoline,
                            context: context.toOpaque())
                        return pigeon_http_start(&config, &started, &errorText, errorText.count)
                    }
                }
            }
        } }
        guard status == 0, let started else {
            context.release()
            workers.stop()
            throw StartError(description: Self.text(errorText))
        }
        self.context = context
        self.workers = workers
        self.port = pigeon_http_bound_port(started)
        self.server = Mutex(started)
    }

    /// Stops accepting new connections; requests in progress finish.
    package func quiesce() {
        server.withLock { server in
            if let server { pigeon_http_quiesce(server) }
        }
    }

    /// Requests whose handler is still running.
    package var requestsInFlight: Int {
        server.withLock { server in server.map { Int(pigeon_http_in_flight($0)) } ?? 0 }
    }

    /// Open connections.
    package var openConnections: Int {
        server.withLock { server in server.map { Int(pigeon_http_connections($0)) } ?? 0 }
    }

    /// Connections closed because a whole request did not arrive within the deadline.
    package var deadlineClosures: Int {
        server.withLock { server in server.map { Int(pigeon_http_deadline_closures($0)) } ?? 0 }
    }

    /// Why a certificate could not replace the one in use (which then stays).
    package struct CertificateError: Error, CustomStringConvertible {
        package var description: String
    }

    /// HTTPS: new connections present this certificate chain (PEM, leaf first) and key from now
    /// on; connections already open keep theirs. The pair is checked first (parsable, the key
    /// belongs to the leaf); on error the certificate in use stays.
    package func replaceCertificate(certificatePEM: String, keyPEM: String) throws(CertificateError) {
        var errorText = [CChar](repeating: 0, count: 256)
        let status: Int32? = server.withLock { server in
            server.map { pigeon_http_replace_certificate($0, certificatePEM, keyPEM, &errorText, errorText.count) }
        }
        guard let status else { throw CertificateError(description: "the listener has stopped") }
        guard status == 0 else {
            throw CertificateError(description: Self.text(errorText))
        }
    }

    /// When a certificate is valid: from `notBefore` until `notAfter`.
    package struct CertificateValidity: Sendable, Equatable {
        package var notBefore: Date
        package var notAfter: Date

        /// Why the certificate cannot be served at `now` (not yet valid, or expired); nil when it can.
        package func problem(at now: Date) -> String? {
            let format = ISO8601DateFormatter()
            if notBefore > now {
                return "the certificate is not valid before \(format.string(from: notBefore)) (clients would refuse it): wait, or check its dates and this host's clock"
            }
            if notAfter <= now { return "the certificate expired at \(format.string(from: notAfter)): renew it" }
            return nil
        }
    }

    /// Checks a certificate chain and key as ``replaceCertificate(certificatePEM:keyPEM:)`` would
    /// (for `check-config`, before a reload); returns when the leaf is valid.
    package static func checkCertificate(certificatePEM: String, keyPEM: String) throws(CertificateError) -> CertificateValidity {
        var errorText = [CChar](repeating: 0, count: 256)
        var notBefore: Int64 = 0, notAfter: Int64 = 0
        guard pigeon_http_check_certificate(certificatePEM, keyPEM, &notBefore, &notAfter, &errorText, errorText.count) == 0 else {
            throw CertificateError(description: Self.text(errorText))
        }
        return CertificateValidity(notBefore: Date(timeIntervalSince1970: TimeInterval(notBefore)),
                                   notAfter: Date(timeIntervalSince1970: TimeInterval(notAfter)))
    }

    /// The reason the C shim wrote into a buffer (NUL-terminated).
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Connections refused at accept because the unauthenticated ones were at their cap, and
    /// cut because they did not authenticate in time, since start.
    package var unauthenticatedRefusals: Int {
        server.withLock { server in server.map { Int(pigeon_http_unauthenticated_refusals($0)) } ?? 0 }
    }
    package var unauthenticatedClosures: Int {
        server.withLock { server in server.map { Int(pigeon_http_unauthenticated_closures($0)) } ?? 0 }
    }

    /// Open connections that have not authenticated yet (see ``Configuration/unauthenticatedLimit``).
    package var unauthenticatedConnections: Int {
        server.withLock { server in server.map { Int(pigeon_http_unauthenticated_connections($0)) } ?? 0 }
    }

    /// Unauthenticated connections cut to make room for a new one, since start.
    package var unauthenticatedEvictions: Int {
        server.withLock { server in server.map { Int(pigeon_http_unauthenticated_evictions($0)) } ?? 0 }
    }
    /// Connections refused because their address is not in ``Configuration/allowedClients``, since start.
    package var allowlistRefusals: Int {
        server.withLock { server in server.map { Int(pigeon_http_allowlist_refusals($0)) } ?? 0 }
    }

    /// HTTPS: when the certificate presented now expires; nil for plain HTTP.
    package var certificateExpiry: Date? {
        let seconds = server.withLock { server in server.map { pigeon_http_certificate_not_after($0) } ?? 0 }
        return seconds > 0 ? Date(timeIntervalSince1970: TimeInterval(seconds)) : nil
    }

    /// Waits up to `seconds` for the handlers in progress to answer (awaited: no thread waits);
    /// true when none is left running.
    @discardableResult
    package func drain(upTo seconds: Double) async -> Bool {
        let handlers = context.takeUnretainedValue().handlers
        guard handlers.count > 0 else { return true }
        return await BoundedWait.value(withinSeconds: seconds) { await handlers.idle() } != nil && handlers.count == 0
    }

    /// Answers the handlers still running with 503, closes every connection and releases the
    /// socket; joins the server's threads, so it blocks its thread (never call it from a task).
    /// A graceful stop calls ``drain(upTo:)`` first.
    package func stop() {
        let stopped: Bool = server.withLock { server in
            guard let running = server else { return false }
            pigeon_http_stop(running)
            server = nil
            return true
        }
        if stopped {
            workers.stop()
            context.release()
        }
    }

    deinit {
        stop()
    }
}

/// What the C callbacks reach through their context pointer.
private final class ExchangeContext: Sendable {
    let admit: HTTPServer.Admission
    let handler: HTTPServer.Handler
    let logger: Logger
    let workers: WorkerThreads
    let limit: ConcurrencyLimit
    /// The handlers running, for a stop's drain.
    let handlers = HandlersInFlight()
    /// The headers copied into each request.
    let requestHeaders: [String]
    /// At most one diagnostic line a second per listener; the others are counted.
    let diagnostics = LogThrottle(interval: 1)

    init(admit: @escaping HTTPServer.Admission, handler: @escaping HTTPServer.Handler, logger: Logger, workers: WorkerThreads, limit: ConcurrencyLimit,
         requestHeaders: Set<String>) {
        self.requestHeaders = requestHeaders.sorted()
        self.admit = admit
        self.handler = handler
        self.logger = logger
        self.workers = workers
        self.limit = limit
    }
}

/// The C exchange, handed from the I/O thread to the handler's task; only
/// `pigeon_http_complete` touches it there, exactly once.
private struct ExchangeHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// The request, with the headers its handlers read (`requestHeaders`) and no others.
private func readRequest(_ exchange: OpaquePointer, requestHeaders: [String]) -> HTTPRequest {
    let method = String(cString: pigeon_http_method(exchange))
    let path = String(cString: pigeon_http_path(exchange))
    let query = HTTPRequest.parseQuery(String(cString: pigeon_http_query(exchange)))
    var headers: [String: String] = [:]
    for name in requestHeaders {
        if let value = pigeon_http_header(exchange, name) {
            headers[name] = String(cString: value)
        }
    }
    var body = Data()
    var length = 0
    // The body's buffer becomes the Data's (freed with it): a 30 MB send is not held twice.
    if let bytes = pigeon_http_take_body(exchange, &length) {
        body = length > 0 ? Data(bytesNoCopy: bytes, count: length, deallocator: .free) : Data()
        if length == 0 { free(bytes) }
    }
    return HTTPRequest(
        method: method, path: path, query: query, headers: headers, body: body,
        bodyTooLarge: pigeon_http_body_too_large(exchange) != 0,
        peer: String(cString: pigeon_http_peer(exchange)))
}

private let admitTrampoline: pigeon_http_admit = { rawContext, exchange in
    guard let rawContext, let exchange else { return -1 }
    let context = Unmanaged<ExchangeContext>.fromOpaque(rawContext).takeUnretainedValue()
    let head = HTTPRequestHead(
        method: String(cString: pigeon_http_method(exchange)), path: String(cString: pigeon_http_path(exchange)),
        authorization: pigeon_http_header(exchange, "authorization").map { String(cString: $0) })
    switch context.admit(head) {
    case .accept(let maxBytes): return max(0, maxBytes)
    case .acceptAuthenticated(let maxBytes):
        pigeon_http_authenticated(exchange)
        return max(0, maxBytes)
    case .refuse: return -1
    case .refuseWrongCredentials:
        pigeon_http_refused_credentials(exchange)
        return -1
    }
}

private let exchangeTrampoline: pigeon_http_handler = { rawContext, exchange in
    guard let rawContext, let exchange else { return }
    let context = Unmanaged<ExchangeContext>.fromOpaque(rawContext).takeUnretainedValue()
    let request = readRequest(exchange, requestHeaders: context.requestHeaders)
    let handle = ExchangeHandle(pointer: exchange)
    let (handler, limit, handlers) = (context.handler, context.limit, context.handlers)
    handlers.begin()
    Task(executorPreference: context.workers) {
        await limit.acquire()
        let response = await handler(request)
        limit.release()
        complete(handle.pointer, with: response)
        handlers.end()
    }
}

/// Bodies from this size on are sent from where they are instead of copied into the server: a
/// million recipients' answer is 54 MiB, and a copy of it was the largest part of the send's peak.
private let uncopiedBodySize = 64 * 1024

/// Keeps a body handed to the server without a copy alive until the server releases it.
private final class HeldBody {
    let data: Data
    init(_ data: Data) { self.data = data }
}

private let releaseHeldBody: pigeon_http_body_release = { owner in
    guard let owner else { return }
    Unmanaged<HeldBody>.fromOpaque(owner).release()
}

private func complete(_ exchange: OpaquePointer, with response: HTTPResponse) {
    CStrings.with(response.headers.map(\.name)) { names in
        CStrings.with(response.headers.map(\.value)) { values in
            guard response.body.count >= uncopiedBodySize, !response.dropConnection else {
                response.body.withUnsafeBytes { body in
                    pigeon_http_complete(
                        exchange, UInt32(clamping: response.status),
                        body.bindMemory(to: UInt8.self).baseAddress, body.count,
                        names, values, response.headers.count,
                        response.dropConnection ? 1 : 0)
                }
                return
            }
            // A Data this large keeps its bytes in heap storage of its own, which does not move
            // while the Data is alive and unchanged; HeldBody keeps it so until the server
            // releases it (once, when the response is destroyed, sent or not).
            let held = Unmanaged.passRetained(HeldBody(response.body))
            held.takeUnretainedValue().data.withUnsafeBytes { body in
                pigeon_http_complete_owned(
                    exchange, UInt32(clamping: response.status),
                    body.bindMemory(to: UInt8.self).baseAddress, body.count,
                    releaseHeldBody, held.toOpaque(),
                    names, values, response.headers.count, 0)
            }
        }
    }
}

private let logTrampoline: pigeon_http_logger = { rawContext, message in
    guard let rawContext, let message else { return }
    let context = Unmanaged<ExchangeContext>.fromOpaque(rawContext).takeUnretainedValue()
    // Clients cause most of these (limits reached, resets): a flood of them must not flood the log.
    guard let suppressed = context.diagnostics.admit(now: ProcessInfo.processInfo.systemUptime) else { return }
    var metadata: [String: String] = [:]
    if suppressed > 0 { metadata["suppressedSinceLast"] = String(suppressed) }
    context.logger.info("libmicrohttpd: \(String(cString: message))", metadata: metadata)
}
