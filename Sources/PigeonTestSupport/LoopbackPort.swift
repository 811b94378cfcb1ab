import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Ports on 127.0.0.1 for servers a test starts as child processes, and raw exchanges with them.
package enum LoopbackPort {
    /// No port could be had from the kernel.
    package struct NoFreePort: Error {
        package init() {}
    }

    /// A port the kernel just handed out for 127.0.0.1 and that is free again: another process
    /// could take it before the caller binds, so callers still retry on a failed start.
    package static func free() -> Int? {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return nil }
        defer { close(socketFD) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { return nil }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        guard named == 0 else { return nil }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port` right now.
    package static func isAccepting(_ port: Int) -> Bool {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return false }
        defer { close(socketFD) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Waits (blocking the calling thread, polling every 20 ms) until `port` accepts connections
    /// or `stillStarting` says the server gave up; true when it accepts within `timeout`.
    package static func waitUntilAccepting(_ port: Int, timeout: Duration = .seconds(15), stillStarting: () -> Bool = { true }) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if isAccepting(port) { return true }
            if !stillStarting() { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    /// Waits (blocking the calling thread, polling every 20 ms) until the process `processIdentifier`
    /// itself listens on 127.0.0.1:`port`, or `stillStarting` says it gave up; true when it does
    /// within `timeout`. Unlike `waitUntilAccepting`, another process that took the port between
    /// `free()` and the child's bind does not pass for the child.
    package static func waitUntilListening(_ port: Int, processIdentifier: Int32, timeout: Duration = .seconds(15),
                                           stillStarting: () -> Bool = { true }) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let inode = listeningSocketInode(port: port), ownsSocket(processIdentifier, inode: inode) { return true }
            if !stillStarting() { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    /// The inode of the socket listening on 127.0.0.1:`port` (or on every address), from /proc/net/tcp.
    private static func listeningSocketInode(port: Int) -> String? {
        guard let table = readWhole("/proc/net/tcp") else { return nil }
        let portHex = String(format: "%04X", port)
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9, fields[3] == "0A" else { continue }
            let local = fields[1]
            guard local == "0100007F:\(portHex)" || local == "00000000:\(portHex)" else { continue }
            return String(fields[9])
        }
        return nil
    }

    /// A file of /proc read to its end. /proc files report a size of 0 and give a page or so per
    /// read: `String(contentsOfFile:)` saw only the first sockets of a busy machine, so a server
    /// listening further down the table was never found (and its start waited a minute per try).
    private static func readWhole(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: buffer[..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether one of `processIdentifier`'s open descriptors is the socket `inode`.
    private static func ownsSocket(_ processIdentifier: Int32, inode: String) -> Bool {
        let folder = "/proc/\(processIdentifier)/fd"
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return false }
        let wanted = "socket:[\(inode)]"
        return descriptors.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)")) == wanted }
    }

    /// Sends `bytes` to 127.0.0.1:`port` over a new TCP connection, closes the sending half once
    /// nothing has come back for `settleMilliseconds`, and returns everything the server wrote until it closed the connection, or what had
    /// arrived when `timeout` passed (blocking the calling thread); nil when it could not connect.
    /// For raw HTTP/1.1 exchanges no client library would send (malformed heads, fuzzing).
    package static func exchange(port: Int, bytes: [UInt8], timeout: Duration = .seconds(10), settleMilliseconds: Int = 5) -> [UInt8]? {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return nil }
        // Closed with a reset, not a FIN: thousands of exchanges a minute (fuzzing) would otherwise
        // leave as many local ports in TIME_WAIT and run out of them (connect: EADDRNOTAVAIL).
        var abortive = linger(l_onoff: 1, l_linger: 0)
        setsockopt(socketFD, SOL_SOCKET, SO_LINGER, &abortive, socklen_t(MemoryLayout<linger>.size))
        defer { close(socketFD) }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // A signal (libFuzzer's timer, say) can interrupt connect; the connection then completes
        // on its own: wait until the socket is writable and read its result.
        guard connected == 0 || (errno == EINTR && finishConnecting(socketFD)) else { return nil }
        let deadline = ContinuousClock.now + timeout
        var sent = 0
        while sent < bytes.count {
            // MSG_NOSIGNAL: a server that closed early must not end the caller with SIGPIPE.
            let written = bytes[sent...].withUnsafeBytes { send(socketFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { break }
            sent += written
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        // libmicrohttpd (edge-triggered epoll) can miss an end of stream that arrives in the same
        // segment as the last bytes of an incomplete head, and then holds the connection until its
        // deadline: the sending half is closed only after the server had a moment to read.
        var halfClosed = false
        while true {
            if !halfClosed {
                var waiting = pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)
                let ready = poll(&waiting, 1, Int32(settleMilliseconds))
                if ready < 0 && errno == EINTR { continue }
                if ready == 0 {
                    shutdown(socketFD, Int32(SHUT_WR))
                    halfClosed = true
                }
            }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { break }
            var waiting = pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            let ready = poll(&waiting, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { break }
            let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            received.append(contentsOf: buffer[..<count])
        }
        return received
    }

    /// Waits (up to 10 s) for an interrupted connect to finish; true when it succeeded.
    private static func finishConnecting(_ socketFD: Int32) -> Bool {
        var waiting = pollfd(fd: socketFD, events: Int16(POLLOUT), revents: 0)
        var ready = poll(&waiting, 1, 10_000)
        while ready < 0 && errno == EINTR { ready = poll(&waiting, 1, 10_000) }
        guard ready > 0 else { return false }
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(socketFD, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 && failure == 0
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
