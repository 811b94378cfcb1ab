import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection from a chosen loopback address (127.0.0.2 is another client as far as
/// a server is concerned), for tests that play misbehaving clients: slow senders, idle holders.
public final class RawConnection: @unchecked Sendable {
    // @unchecked: the descriptor is only used by the test that owns the connection.
    private let descriptor: Int32

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Connects from `source` (port chosen by the kernel) to `host:port`.
    public init(to host: String = "127.0.0.1", port: UInt16, from source: String = "127.0.0.1") throws {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        descriptor = socketDescriptor
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &remote.sin_addr)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            close(descriptor)
            throw Failure(description: "bind \(source): \(String(cString: strerror(errno)))")
        }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw Failure(description: "connect: \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        close(descriptor)
    }

    /// Sends `text`; false once the server closed the connection.
    @discardableResult
    public func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { buffer in
            Glibc.send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) == buffer.count
        }
    }

    /// Whether the server has closed the connection (a read returns end of stream or an error),
    /// waiting up to `milliseconds` for that.
    public func isClosedByServer(waitingMilliseconds milliseconds: Int32 = 0) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) > 0 else { return false }
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count <= 0
    }
}
