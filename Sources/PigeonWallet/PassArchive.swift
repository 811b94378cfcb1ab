import Foundation
import PigeonDomain

/// A first look at a `.pkpass` before it is stored: a ZIP archive (read from its central
/// directory, nothing inflated) holding at least `pass.json`, `manifest.json` and `signature`,
/// with no entry whose name climbs out of the archive. Wallet checks the signature itself; this
/// catches a bank sending the wrong bytes with a clear error instead of a pass no phone can read.
package enum PassArchive {
    package static let requiredEntries: Set<String> = ["pass.json", "manifest.json", "signature"]
    /// Entries a pass may hold (images at several scales and localisations stay far below).
    package static let maximumEntries = 1_000

    /// Why `data` is not a usable `.pkpass`, or nil.
    package static func problem(_ data: Data) -> String? {
        switch entryNames(data) {
        case .failure(let reason):
            return reason.message
        case .success(let names):
            let missing = requiredEntries.subtracting(names).sorted()
            if !missing.isEmpty { return "the archive has no \(missing.joined(separator: ", ")) (a signed .pkpass has pass.json, manifest.json and signature)" }
            if let bad = names.first(where: { $0.hasPrefix("/") || $0.split(separator: "/").contains("..") || $0.contains("\\") }) {
                return "the archive has an entry named '\(bad.prefix(80))', outside the pass"
            }
            return nil
        }
    }

    package struct Malformed: Error {
        var message: String
    }

    /// The names in the archive's central directory.
    package static func entryNames(_ data: Data) -> Result<[String], Malformed> {
        let bytes = [UInt8](data)
        guard bytes.count >= 22, bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) else {
            return .failure(Malformed(message: "it is not a ZIP archive (a .pkpass is one)"))
        }
        func uint16(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        func uint32(_ offset: Int) -> Int { uint16(offset) | uint16(offset + 2) << 16 }
        // The end-of-central-directory record: within the last 22 + 65,535 bytes (its comment).
        let earliest = max(0, bytes.count - 22 - 65_535)
        var end = bytes.count - 22
        while end >= earliest && !(bytes[end] == 0x50 && bytes[end + 1] == 0x4B && bytes[end + 2] == 0x05 && bytes[end + 3] == 0x06) {
            end -= 1
        }
        guard end >= earliest else { return .failure(Malformed(message: "the ZIP archive has no central directory (truncated?)")) }
        let count = uint16(end + 10)
        var offset = uint32(end + 16)
        guard count <= maximumEntries else { return .failure(Malformed(message: "the archive has more than \(maximumEntries) entries")) }
        var names: [String] = []
        for _ in 0..<count {
            guard offset + 46 <= end, uint32(offset) == 0x0201_4B50 else {
                return .failure(Malformed(message: "the ZIP archive's central directory is damaged"))
            }
            let nameLength = uint16(offset + 28), extraLength = uint16(offset + 30), commentLength = uint16(offset + 32)
            guard offset + 46 + nameLength <= end else {
                return .failure(Malformed(message: "the ZIP archive's central directory is damaged"))
            }
            names.append(String(decoding: bytes[(offset + 46)..<(offset + 46 + nameLength)], as: UTF8.self))
            offset += 46 + nameLength + extraLength + commentLength
        }
        return .success(names)
    }
}
