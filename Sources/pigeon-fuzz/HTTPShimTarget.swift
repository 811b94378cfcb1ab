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
    private static let configuration = HTTPServer.Configuration(
        host: "127.0.0.1", port: 0, connectionLimit: 64, perAddressConnectionLimit: 32, idleTimeoutSeconds: 2,
        requestDeadlineSeconds: 2, handlerThreads: 2, concurrentHandlers: 4, unauthenticatedLimit: 32,
        unauthenticatedPerAddressLimit: 16, unauthenticatedDeadlineSeconds: 3)

    private static let server: HTTPServer = {
        do {
            return try HTTPServer(configuration: configuration, logger: .silent, admit: { head in
                if head.path.hasPrefix("/refuse") { return .refuse }
                if head.path.hasPrefix("/wrong") { return .refuseWrongCredentials }
                return head.path.hasPrefix("/authenticated") ? .acceptAuthenticated(maxBytes: 1024) : .accept(maxBytes: 1024)
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

    /// The same listener over HTTPS (a throwaway self-signed certificate made at start), fed the
    /// input raw as the first bytes of the connection: GnuTLS's record and handshake parsing,
    /// the shim's certificate selection and its unauthenticated connections' accounting.
    private static let tlsServer: HTTPServer = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-fuzz-tls-\(getpid())")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let key = folder.appendingPathComponent("key.pem").path, certificate = folder.appendingPathComponent("certificate.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                             "-out", certificate, "-days", "2", "-subj", "/CN=127.0.0.1"]
        openssl.standardError = FileHandle.nullDevice
        do {
            try openssl.run()
            openssl.waitUntilExit()
            let tls = HTTPServer.TLS(certificatePEM: try String(contentsOfFile: certificate, encoding: .utf8),
                                     keyPEM: try String(contentsOfFile: key, encoding: .utf8))
            try? FileManager.default.removeItem(at: folder)
            var configuration = Self.configuration
            configuration.tls = tls
            return try HTTPServer(configuration: configuration, logger: .silent, admit: { _ in .acceptAuthenticated(maxBytes: 1024) },
                                  handler: { request in HTTPResponse(status: 200, headers: [], body: Data(request.path.utf8)) })
        } catch {
            fatalError("the fuzz HTTPS listener did not start: \(error)")
        }
    }()

    static func tlsExchange(_ data: Data) {
        guard LoopbackPort.exchange(port: Int(tlsServer.port), bytes: [UInt8](data), timeout: .seconds(8)) != nil else {
            fatalError("no connection to the HTTPS listener: \(String(cString: strerror(errno)))")
        }
    }

    static func exchange(_ data: Data) {
        let port = Int(server.port)
        guard LoopbackPort.exchange(port: port, bytes: [UInt8](data), timeout: .seconds(8)) != nil else {
            fatalError("no connection to the listener: \(String(cString: strerror(errno)))")
        }
    }
}
#endif
