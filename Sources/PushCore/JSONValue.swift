import Foundation

/// A small JSON document model that encodes straight to bytes, keys in the order given.
/// Push payloads are built for every device of a fan-out; JSONSerialization spends most of its
/// time bridging dictionaries, this does not.
package enum JSONValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case object([(String, JSONValue)])
    /// JSON text written as it is: a value the caller has already checked is JSON (a Live
    /// Activity's content state as the bank sent it, a number with a fraction).
    case raw(String)

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.raw(let a), .raw(let b)): a == b
        default: false
        }
    }

    /// The UTF-8 encoding, without insignificant whitespace.
    package var encoded: Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        write(into: &bytes)
        return Data(bytes)
    }

    private func write(into bytes: inout [UInt8]) {
        switch self {
        case .string(let text):
            Self.writeString(text, into: &bytes)
        case .int(let number):
            bytes.append(contentsOf: String(number).utf8)
        case .bool(let flag):
            bytes.append(contentsOf: (flag ? "true" : "false").utf8)
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                Self.writeString(key, into: &bytes)
                bytes.append(UInt8(ascii: ":"))
                value.write(into: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        case .raw(let text):
            bytes.append(contentsOf: text.utf8)
        }
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped (RFC 8259 §7),
    /// everything else as UTF-8.
    static func writeString(_ text: String, into bytes: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
