internal import CHTTPShim
import Dispatch
import Foundation
import PigeonCore
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd: keep-alive, one thread per connection up to
/// ``Configuration/connectionLimit``, bodies bounded by ``Configuration/maxBodyBytes``, idle
/// connections closed after ``Configuration/idleTimeoutSeconds``, optional TLS.
///
/// Each request is answered by an async handler. The connection thread (never a thread of the
/// Swift cooperative pool) waits for the handler, so back-pressure is the connection limit.
public final class HTTPServer: Sendable {
    /// How the server listens and what it bounds.
    public struct Configuration: Sendable {
        public var host: String
        public var port: UInt16
        public var connectionLimit: Int
        public var idleTimeoutSeconds: Int
        public var maxBodyBytes: Int
        /// PEM text of the certificate chain and key; `nil` for plain HTTP.
        public var tls: (certificatePEM: String, keyPEM: String)?

        public init(
            host: String = "127.0.0.1", port: UInt16 = 8080, connectionLimit: Int = 256,
            idleTimeoutSeconds: Int = 30, maxBodyBytes: Int = 1 << 20,
            tls: (certificatePEM: String, keyPEM: String)? = nil
        ) {
            self.host = host
            self.port = port
            self.connectionLimit = connectionLimit
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.maxBodyBytes = maxBodyBytes
            self.tls = tls
        }
    }

    /// Answers one request.
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    /// Why the server could not start.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The port actually bound (useful with port 0).
    public let port: UInt16
    private let context: Unmanaged<ExchangeContext>
    // The C server is only touched by `start`, `quiesce` and `stop`, serialised by this mutex.
    private let server: Mutex<OpaquePointer?>

    /// Binds and starts serving; returns once the socket listens.
    public init(configuration: Configuration, logger: Logger, handler: @escaping Handler) throws {
        // TLS writes to a client that hung up raise SIGPIPE; it must not end the server.
        signal(SIGPIPE, SIG_IGN)
        let context = Unmanaged.passRetained(ExchangeContext(handler: handler, logger: logger))
        var started: OpaquePointer?
        var errorText = [CChar](repeating: 0, count: 256)
        let status = configuration.host.withCString { host in
            withOptionalCString(configuration.tls?.certificatePEM) { certificate in
                withOptionalCString(configuration.tls?.keyPEM) { key in
                    var config = pigeon_http_config(
                        address: host,
                        port: configuration.port,
                        connection_limit: UInt32(clamping: configuration.connectionLimit),
                        idle_timeout_seconds: UInt32(clamping: configuration.idleTimeoutSeconds),
                        max_body_bytes: configuration.maxBodyBytes,
                        tls_certificate_pem: certificate,
                        tls_key_pem: key,
                        handler: exchangeTrampoline,
                        logger: logTrampoline,
                        context: context.toOpaque())
                    return pigeon_http_start(&config, &started, &errorText, errorText.count)
                }
            }
        }
        guard status == 0, let started else {
            context.release()
            throw StartError(description: String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.context = context
        self.port = pigeon_http_bound_port(started)
        self.server = Mutex(started)
    }

    /// Stops accepting new connections; requests in progress finish.
    public func quiesce() {
        server.withLock { server in
            if let server { pigeon_http_quiesce(server) }
        }
    }

    /// Closes every connection (waiting for running handlers) and releases the socket.
    public func stop() {
        let stopped: Bool = server.withLock { server in
            guard let running = server else { return false }
            pigeon_http_stop(running)
            server = nil
            return true
        }
        if stopped { context.release() }
    }

    deinit {
        stop()
    }
}

/// What the C callbacks reach through their context pointer.
private final class ExchangeContext: Sendable {
    let handler: HTTPServer.Handler
    let logger: Logger

    init(handler: @escaping HTTPServer.Handler, logger: Logger) {
        self.handler = handler
        self.logger = logger
    }
}

/// Carries the handler's answer from its task back to the waiting connection thread.
private final class ResponseSlot: @unchecked Sendable {
    // Written once by the task before it finishes its executor, read once after
    // `runUntilFinished()` returns: the executor's lock orders the two accesses.
    var response: HTTPResponse?
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

private func readRequest(_ exchange: OpaquePointer) -> HTTPRequest {
    let method = String(cString: pigeon_http_method(exchange))
    let path = String(cString: pigeon_http_path(exchange))
    let query = HTTPRequest.parseQuery(String(cString: pigeon_http_query(exchange)))
    var headers: [String: String] = [:]
    for name in ["content-type", "content-length", "authorization", "host", "soapaction",
                 "accept", "x-forwarded-proto", "user-agent"] {
        if let value = pigeon_http_header(exchange, name) {
            headers[name] = String(cString: value)
        }
    }
    var length = 0
    let body: Data
    if let bytes = pigeon_http_body(exchange, &length), length > 0 {
        body = Data(bytes: bytes, count: length)
    } else {
        body = Data()
    }
    return HTTPRequest(
        method: method, path: path, query: query, headers: headers, body: body,
        bodyTooLarge: pigeon_http_body_too_large(exchange) != 0,
        peer: String(cString: pigeon_http_peer(exchange)))
}

private let exchangeTrampoline: pigeon_http_handler = { rawContext, exchange in
    guard let rawContext, let exchange else { return }
    let context = Unmanaged<ExchangeContext>.fromOpaque(rawContext).takeUnretainedValue()
    let request = readRequest(exchange)
    let slot = ResponseSlot()
    let handler = context.handler
    let executor = ConnectionThreadExecutor()
    Task(executorPreference: executor) {
        slot.response = await handler(request)
        executor.finish()
    }
    executor.runUntilFinished()
    let response = slot.response ?? HTTPResponse.text(500, "no response\n")
    let status = response.body.withUnsafeBytes { buffer in
        pigeon_http_respond(
            exchange, UInt32(clamping: response.status),
            buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count)
    }
    guard status == 0 else {
        context.logger.error("cannot allocate a response", metadata: ["path": request.path])
        return
    }
    for header in response.headers {
        _ = pigeon_http_add_header(exchange, header.name, header.value)
    }
}

private let logTrampoline: pigeon_http_logger = { rawContext, message in
    guard let rawContext, let message else { return }
    let context = Unmanaged<ExchangeContext>.fromOpaque(rawContext).takeUnretainedValue()
    context.logger.warning("libmicrohttpd: \(String(cString: message))")
}
