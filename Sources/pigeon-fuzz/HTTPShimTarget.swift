#if PIGEON_FUZZ
import Foundation
import PigeonCore
import PigeonHTTP
import PigeonTestSupport

/// The C shim's request handling (libmicrohttpd under `CHTTPShim`) driven through a real listener
/// on 127.0.0.1: each input is written raw to a new connection, whose sending half is then closed,
/// and the answer read to the end. The listener is set up as the gateway's are (connection,
/// per-address and unauthenticated caps, deadlines, a body admission decided from the head), so
/// the shim's head checks, body collection, suspension and answer paths all see the bytes. The
/// server must answer or close every connection, never crash, and keep accepting.
enum HTTPShimTarget {
    /// Paths under `/refuse` are admitted with no body (as SOAP without credentials is); the
    /// rest with up to 1 KiB; `/large` answers with a body bigger than a socket buffer.
    private static let server: HTTPServer = {
        let configuration = HTTPServer.Configuration(
            host: "127.0.0.1", port: 0, connectionLimit: 64, perAddressConnectionLimit: 32, idleTimeoutSeconds: 2,
            requestDeadlineSeconds: 2, handlerThreads: 2, concurrentHandlers: 4, unauthenticatedLimit: 32,
            unauthenticatedPerAddressLimit: 16, unauthenticatedDeadlineSeconds: 3)
        do {
            return try HTTPServer(configuration: configuration, logger: .silent, admit: { head in
                head.path.hasPrefix("/refuse") ? .refuse : .accept(maxBytes: 1024)
            }, handler: { request in
                let summary = "\(request.method) \(request.path) query=\(request.query.count) headers=\(request.headers.count) "
                    + "body=\(request.body.count) tooLarge=\(request.bodyTooLarge)\n"
                let body = request.path.hasPrefix("/large") ? Data(repeating: 0x61, count: 256 * 1024) : Data(summary.utf8)
                return HTTPResponse(status: request.bodyTooLarge ? 413 : 200, headers: [("Content-Type", "text/plain")], body: body)
            })
        } catch {
            fatalError("the fuzz listener did not start: \(error)")
        }
    }()

    static func exchange(_ data: Data) {
        let port = Int(server.port)
        guard LoopbackPort.exchange(port: port, bytes: [UInt8](data), timeout: .seconds(8)) != nil else {
            fatalError("no connection to the listener: \(String(cString: strerror(errno)))")
        }
    }
}
#endif
