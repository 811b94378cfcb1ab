import Foundation
import PigeonDomain

/// Writes a ZIP archive of stored (uncompressed) entries: what a `.pkpass` is. Wallet reads
/// stored entries as well as deflated ones; passes are mostly PNG images, which do not deflate.
package struct ZIPWriter {
    private var data = Data()
    private var directory = Data()
    private var count = 0

    package init() {}

    /// Adds an entry; names are relative paths with `/` separators.
    package mutating func add(_ name: String, _ content: Data) {
        let nameBytes = Data(name.utf8)
        let crc = CRC32.checksum(content)
        let offset = UInt32(data.count)
        // Local file header: version 2.0, UTF-8 names (bit 11), stored, no date.
        data.append(le32: 0x0403_4B50)
        data.append(le16: 20); data.append(le16: 0x0800); data.append(le16: 0)
        data.append(le16: 0); data.append(le16: 0x21)
        data.append(le32: crc); data.append(le32: UInt32(content.count)); data.append(le32: UInt32(content.count))
        data.append(le16: UInt16(nameBytes.count)); data.append(le16: 0)
        data.append(nameBytes)
        data.append(content)
        // Its central directory record.
        directory.append(le32: 0x0201_4B50)
        directory.append(le16: 20); directory.append(le16: 20); directory.append(le16: 0x0800); directory.append(le16: 0)
        directory.append(le16: 0); directory.append(le16: 0x21)
        directory.append(le32: crc); directory.append(le32: UInt32(content.count)); directory.append(le32: UInt32(content.count))
        directory.append(le16: UInt16(nameBytes.count)); directory.append(le16: 0); directory.append(le16: 0)
        directory.append(le16: 0); directory.append(le16: 0); directory.append(le32: 0); directory.append(le32: offset)
        directory.append(nameBytes)
        count += 1
    }

    /// The archive: entries, central directory, end record.
    package func finish() -> Data {
        var archive = data
        let directoryOffset = UInt32(archive.count)
        archive.append(directory)
        archive.append(le32: 0x0605_4B50)
        archive.append(le16: 0); archive.append(le16: 0)
        archive.append(le16: UInt16(count)); archive.append(le16: UInt16(count))
        archive.append(le32: UInt32(directory.count)); archive.append(le32: directoryOffset)
        archive.append(le16: 0)
        return archive
    }
}

/// CRC-32 (IEEE 802.3, as ZIP uses it).
package enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    package static func checksum(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        data.withUnsafeBytes { bytes in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }
}

extension Data {
    package mutating func append(le16 value: UInt16) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    package mutating func append(le32 value: UInt32) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}
