internal import CHTTPShim
import Foundation

/// A network of client addresses in CIDR notation (`10.20.0.0/16`, `2001:db8:1::/48`; a single
/// address without a prefix is the network of that address alone), as `bankAllowedClients` lists
/// them. An IPv4 client of a dual-stack listener (`::ffff:10.20.1.2`) matches the IPv4 networks.
package struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// 4 or 6.
    package let family: Int
    /// The network's address: 4 bytes (IPv4) or 16 (IPv6), host bits zero.
    package let bytes: [UInt8]
    /// How many leading bits of ``bytes`` count.
    package let prefixLength: Int

    /// Why a network could not be read.
    package struct ParseError: Error, CustomStringConvertible {
        package let description: String
    }

    /// Reads `text`; the host bits of the address must be zero (`10.0.0.1/8` is refused as a
    /// likely typo for `10.0.0.0/8` or `10.0.0.1/32`).
    package init(_ text: String) throws(ParseError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let parts = trimmed.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let addressText = parts.first, !addressText.isEmpty else {
            throw ParseError(description: "'\(trimmed)' is not an address or a network (a.b.c.d/n or an IPv6 prefix)")
        }
        var bytes: [UInt8]
        var family: Int
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, String(addressText), &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            family = 4
        } else if inet_pton(AF_INET6, String(addressText), &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
            family = 6
        } else {
            throw ParseError(description: "'\(addressText)' is not an IPv4 or IPv6 address")
        }
        let width = bytes.count * 8
        var prefixLength = width
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...width).contains(length), parts[1].allSatisfy(\.isASCII) else {
                throw ParseError(description: "'\(trimmed)': the prefix length must be 0 to \(width)")
            }
            prefixLength = length
        }
        // An IPv4 address written as IPv6 (::ffff:a.b.c.d/n) is kept as the IPv4 network.
        if family == 6, prefixLength >= 96, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...])
            family = 4
            prefixLength -= 96
        }
        for bit in prefixLength..<(bytes.count * 8) where bytes[bit / 8] & (0x80 >> UInt8(bit % 8)) != 0 {
            throw ParseError(description: "'\(trimmed)' has bits set past its /\(prefixLength) prefix; write the network's first address")
        }
        self.family = family
        self.bytes = bytes
        self.prefixLength = prefixLength
    }

    /// Whether `address` (IPv4 or IPv6 text) lies in this network, decided by the listener's own
    /// check (`pigeon_http_networks_contain`, what admits a connection).
    package func contains(_ address: String) -> Bool {
        var network = cValue
        var v4 = sockaddr_in(), v6 = sockaddr_in6()
        if inet_pton(AF_INET, address, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            return withUnsafePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pigeon_http_networks_contain(&network, 1, $0) != 0 } }
        }
        if inet_pton(AF_INET6, address, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            return withUnsafePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pigeon_http_networks_contain(&network, 1, $0) != 0 } }
        }
        return false
    }

    /// The network as the C listener takes it.
    var cValue: pigeon_http_network {
        var converted = pigeon_http_network()
        converted.family = UInt8(family)
        converted.prefix_length = UInt8(prefixLength)
        withUnsafeMutableBytes(of: &converted.bytes) { target in
            for (index, byte) in bytes.prefix(target.count).enumerated() { target[index] = byte }
        }
        return converted
    }

    package var description: String {
        var copy = bytes
        let text: String = copy.withUnsafeMutableBytes { raw in
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(family == 4 ? AF_INET : AF_INET6, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return "\(text)/\(prefixLength)"
    }
}
