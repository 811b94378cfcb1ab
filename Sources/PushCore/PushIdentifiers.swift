import Foundation
import Synchronization

/// `apns-id` values for a sender's pushes: UUIDs in APNs' form (lowercase 8-4-4-4-12, version 4
/// and RFC 4122 variant bits), each unique within the process. A random 128-bit base is drawn
/// once; each push takes the next value of a counter added to its low 64 bits.
///
/// Replaces `UUID()` per push: on Linux Foundation's `UUID()` opens, reads and closes
/// `/dev/urandom` on every call (three system calls, about 3.8 µs: some 5% of the gateway's CPU
/// for a push). An `apns-id` names an attempt for Apple and for our logs; it
/// needs to be unique, not secret.
package final class PushIdentifiers: Sendable {
    private let high: UInt64
    private let lowBase: UInt64
    private let counter = Atomic<UInt64>(0)

    /// A sequence whose base comes from `random` (the system's generator unless a test seeds one).
    package init(random: inout some RandomNumberGenerator) {
        // Version 4 in bits 12–15 of the high half.
        high = (random.next() as UInt64) & ~0xF000 | 0x4000
        lowBase = random.next()
    }

    package convenience init() {
        var random = SystemRandomNumberGenerator()
        self.init(random: &random)
    }

    /// The next identifier, as APNs takes it in `apns-id`.
    package func next() -> String {
        let count = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        // The RFC 4122 variant (binary 10) in the top bits of the low half.
        let low = (lowBase &+ count) & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return Self.format(high: high, low: low)
    }

    /// `high` and `low` as a UUID's 8-4-4-4-12 lowercase hexadecimal digits, written digit by
    /// digit into the string's own storage (Foundation's `uuidString` formats through
    /// `vfprintf` and is then lowercased: about 5% of the engine's own CPU a push).
    static func format(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { text in
            let digits: StaticString = "0123456789abcdef"
            var position = 0
            func write(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    text[position] = digits.utf8Start[Int((value >> UInt64(shift)) & 0xF)]
                    position += 1
                }
            }
            func dash() {
                text[position] = UInt8(ascii: "-")
                position += 1
            }
            write(high >> 32, nibbles: 8)
            dash()
            write(high >> 16, nibbles: 4)
            dash()
            write(high, nibbles: 4)
            dash()
            write(low >> 48, nibbles: 4)
            dash()
            write(low, nibbles: 12)
            return position
        }
    }
}
