internal import CH2ServerShim
import Foundation
import PigeonCore

/// An HTTP/2-over-TLS server (libnghttp2 and OpenSSL on one thread) answering each request with
/// a synchronous handler (whose answer may be delayed without holding up other streams). The simulator builds APNs, FCM and OAuth on it.
package final class H2Server: Sendable {
    /// A complete request.
    package struct Request: Sendable {
        package var method: String
        package var path: String
        package var authority: String
        /// Lower-case names.
        package var headers: [String: String]
        package var body: Data
        /// The verified client certificate's subject, when one was presented.
        package var clientSubject: String?
        package var connectionId: UInt64
    }

    /// What to do with a request.
    package struct Response: Sendable {
        package enum Action: Sendable { case respond, dropConnection, goAway, lowerStreamLimit }
        package var status: Int
        package var headers: [String: String]
        package var body: Data
        package var action: Action
        /// Answer this many milliseconds later; the server keeps serving other streams meanwhile.
        package var delayMilliseconds: Int

        package init(status: Int, headers: [String: String] = [:], body: Data = Data(), action: Action = .respond, delayMilliseconds: Int = 0) {
            self.status = status
            self.headers = headers
            self.body = body
            self.action = action
            self.delayMilliseconds = delayMilliseconds
        }

        /// A JSON body with its content type.
        package static func json(_ status: Int, _ text: String, headers: [String: String] = [:]) -> Response {
            Response(status: status, headers: headers.merging(["content-type": "application/json"]) { a, _ in a }, body: Data(text.utf8))
        }
    }

    package typealias Handler = @Sendable (Request) -> Response

    package struct Configuration: Sendable {
        package var host = "127.0.0.1"
        package var port: UInt16 = 0
        package var certificateFile: String
        package var keyFile: String
        /// When set, client certificates are requested and verified against this CA.
        package var clientCAFile: String?
        /// Enforce nghttp2's rapid-reset limit as Debian's libnghttp2 does by default.
        package var enforceRapidResetLimit = false

        package init(certificateFile: String, keyFile: String, clientCAFile: String? = nil) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.clientCAFile = clientCAFile
        }
    }

    package struct StartError: Error, CustomStringConvertible {
        package var description: String
    }

    package let port: UInt16
    // Touched only by init and stop.
    private nonisolated(unsafe) let server: OpaquePointer
    private let box: Unmanaged<HandlerBox>

    package init(configuration: Configuration, handler: @escaping Handler) throws {
        // OpenSSL writes to sockets whose peer may be gone (a gateway killed mid-stream).
        ProcessSignals.ignoreBrokenPipes()
        let box = Unmanaged.passRetained(HandlerBox(handler: handler))
        var error = [CChar](repeating: 0, count: 256)
        let started: OpaquePointer? = configuration.host.withCString { host in
            configuration.certificateFile.withCString { certificate in
                configuration.keyFile.withCString { key in
                    withOptional(configuration.clientCAFile) { clientCA in
                        var config = pigeon_h2s_config(
                            address: host, port: configuration.port, certificate_file: certificate,
                            key_file: key, client_ca_file: clientCA,
                            enforce_reset_limit: configuration.enforceRapidResetLimit ? 1 : 0,
                            handler: handleRequest, context: box.toOpaque())
                        return pigeon_h2s_start(&config, &error, error.count)
                    }
                }
            }
        }
        guard let started else {
            box.release()
            throw StartError(description: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.server = started
        self.box = box
        self.port = pigeon_h2s_port(started)
    }

    /// Connections accepted so far.
    package var connectionsAccepted: UInt64 { pigeon_h2s_connections(server) }

    /// Closes every connection and the listener. Call once.
    package func stop() {
        pigeon_h2s_stop(server)
        box.release()
    }
}

private func withOptional<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// What the C callback reaches through its context pointer.
private final class HandlerBox: Sendable {
    let handler: H2Server.Handler
    init(handler: @escaping H2Server.Handler) { self.handler = handler }
}

private let handleRequest: pigeon_h2s_handler = { context, rawRequest, exchange in
    guard let context, let rawRequest, let exchange else { return }
    let handler = Unmanaged<HandlerBox>.fromOpaque(context).takeUnretainedValue().handler
    let request = rawRequest.pointee
    var headers: [String: String] = [:]
    for index in 0..<request.header_count {
        if let name = request.header_names[index], let value = request.header_values[index] {
            headers[String(cString: name)] = String(cString: value)
        }
    }
    let body = request.body.map { Data(bytes: $0, count: request.body_length) } ?? Data()
    let response = handler(H2Server.Request(
        method: String(cString: request.method), path: String(cString: request.path),
        authority: String(cString: request.authority), headers: headers, body: body,
        clientSubject: request.client_subject.map { String(cString: $0) },
        connectionId: request.connection_id))
    respond(exchange, with: response)
}

/// Hands the response to the shim, which copies it before returning.
private func respond(_ exchange: OpaquePointer, with response: H2Server.Response) {
    let names = Array(response.headers.keys)
    CStrings.with(names.map { $0.lowercased() }) { nameBuffer in
        CStrings.with(names.map { response.headers[$0] ?? "" }) { valueBuffer in
            response.body.withUnsafeBytes { body in
                let action: Int32 = switch response.action {
                case .respond: Int32(PIGEON_H2S_RESPOND)
                case .dropConnection: Int32(PIGEON_H2S_DROP_CONNECTION)
                case .goAway: Int32(PIGEON_H2S_GOAWAY)
                case .lowerStreamLimit: Int32(PIGEON_H2S_STREAM_LIMIT_ONE)
                }
                var raw = pigeon_h2s_response(
                    status: Int32(response.status), header_names: nameBuffer,
                    header_values: valueBuffer, header_count: names.count,
                    body: body.bindMemory(to: UInt8.self).baseAddress, body_length: body.count, action: action,
                    delay_ms: UInt32(clamping: response.delayMilliseconds))
                pigeon_h2s_respond(exchange, &raw)
            }
        }
    }
}
