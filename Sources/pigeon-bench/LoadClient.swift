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

    init(host: String, port: UInt16) throws {
        socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { throw Failure.connect("socket() failed") }
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

    /// Sends one request and reads the whole response; returns the status code and body.
    func exchange(_ request: [UInt8]) throws -> (status: Int, body: [UInt8]) {
        var offset = 0
        while offset < request.count {
            let written = request[offset...].withUnsafeBytes { send(socketDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure.io("send failed: errno \(errno)") }
            offset += written
        }
        // Read until the header block is complete.
        var headerEnd: Int?
        while headerEnd == nil {
            try fill()
            headerEnd = Self.find([13, 10, 13, 10], in: pending)
        }
        let headerText = String(decoding: pending[..<headerEnd!], as: UTF8.self)
        let lines = headerText.split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.split(separator: " ").count >= 2,
              let status = Int(statusLine.split(separator: " ")[1]) else {
            throw Failure.protocolError("bad status line")
        }
        var length = 0
        for line in lines.dropFirst() where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
        }
        let bodyStart = headerEnd! + 4
        while pending.count < bodyStart + length { try fill() }
        let body = Array(pending[bodyStart..<bodyStart + length])
        pending.removeFirst(bodyStart + length)
        return (status, body)
    }

    private func fill() throws {
        let count = buffer.withUnsafeMutableBytes { recv(socketDescriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw Failure.io("connection closed") }
        pending.append(contentsOf: buffer[0..<count])
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if Array(haystack[index..<index + needle.count]) == needle { return index }
        }
        return nil
    }
}
