import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One keep-alive HTTP/1.1 connection with blocking sockets: just enough client to drive the
/// gateway from a thread of its own, without the client's overhead blurring the measurement.
final class LoadClient {
    enum Failure: Error { case connect(String), io(String), protocolError(String) }

    private let socketDescriptor: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var pending: [UInt8] = []

    /// Connects to `host:port`, from the loopback address `source` when given (a server counts
    /// each address as another client).
    init(host: String, port: UInt16, source: String? = nil) throws {
        socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { throw Failure.connect("socket() failed") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(socketDescriptor)
                throw Failure.connect("bind \(source) failed: errno \(errno)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else {
            close(socketDescriptor)
            throw Failure.connect("connect to \(host):\(port) failed: errno \(errno)")
        }
        var one: Int32 = 1
        setsockopt(socketDescriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit {
        close(socketDescriptor)
    }

    /// Sends raw bytes without reading anything (a slow client's partial request).
    func sendRaw(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(socketDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Whether the server closed the connection (checked without waiting).
    var isClosed: Bool {
        var poller = pollfd(fd: socketDescriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(socketDescriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) <= 0
    }

    /// Sends one request and reads the whole response; returns the status code and body length.
    /// Works on bytes without building strings, so the client's own cost stays small next to the
    /// server's.
    func exchange(_ request: [UInt8]) throws -> (status: Int, bodyLength: Int) {
        var offset = 0
        while offset < request.count {
            let written = request[offset...].withUnsafeBytes { send(socketDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure.io("send failed: errno \(errno)") }
            offset += written
        }
        var scanned = 0
        var headerEnd = -1
        while headerEnd < 0 {
            try fill()
            while scanned + 3 < pending.count {
                if pending[scanned] == 13, pending[scanned + 1] == 10, pending[scanned + 2] == 13, pending[scanned + 3] == 10 {
                    headerEnd = scanned
                    break
                }
                scanned += 1
            }
        }
        // "HTTP/1.1 200 …": the status is bytes 9-11.
        guard headerEnd >= 12 else { throw Failure.protocolError("short status line") }
        let status = pending[9...11].reduce(0) { $0 * 10 + Int($1) - 48 }
        let length = contentLength(in: 0..<headerEnd)
        let total = headerEnd + 4 + length
        while pending.count < total { try fill() }
        pending.removeSubrange(0..<total)
        return (status, length)
    }

    /// The value of the Content-Length header within `range` of the pending bytes (0 if absent).
    private func contentLength(in range: Range<Int>) -> Int {
        let name = Array("content-length:".utf8)
        var index = range.lowerBound
        while index + name.count < range.upperBound {
            var matches = true
            for (offset, expected) in name.enumerated() where pending[index + offset] | 0x20 != expected | 0x20 {
                matches = false
                break
            }
            if matches {
                var cursor = index + name.count
                while pending[cursor] == 32 { cursor += 1 }
                var value = 0
                while cursor < range.upperBound, pending[cursor] >= 48, pending[cursor] <= 57 {
                    value = value * 10 + Int(pending[cursor]) - 48
                    cursor += 1
                }
                return value
            }
            index += 1
        }
        return 0
    }

    private func fill() throws {
        let count = buffer.withUnsafeMutableBytes { recv(socketDescriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw Failure.io("connection closed") }
        pending.append(contentsOf: buffer[0..<count])
    }
}
