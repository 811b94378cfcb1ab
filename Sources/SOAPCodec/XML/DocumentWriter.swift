#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Collects a document's UTF-8 bytes in one malloc'd buffer grown with `realloc` and hands it
/// over as `Data` without a copy. A SOAP answer with a million recipients' states is about
/// 55 MB; written into a `String` and then copied into `Data` it needed twice that at its peak.
/// Give a large document's expected size as `capacity`: a growing buffer is copied (jemalloc's
/// `realloc` does not move pages), the old and the new one held together.
final class DocumentWriter {
    private var bytes: UnsafeMutableRawPointer?
    private var count = 0
    private var capacity = 0

    init(capacity: Int = 4096) {
        grow(to: capacity)
    }

    deinit {
        free(bytes)
    }

    static func += (writer: DocumentWriter, text: String) {
        writer.append(text)
    }

    func append(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            guard let base = utf8.baseAddress, !utf8.isEmpty else { return }
            if count + utf8.count > capacity { grow(to: max(capacity * 2, count + utf8.count)) }
            (bytes! + count).copyMemory(from: base, byteCount: utf8.count)
            count += utf8.count
        }
    }

    /// The bytes written, as `Data` owning the buffer; the writer is empty afterwards.
    func take() -> Data {
        guard let buffer = bytes, count > 0 else { return Data() }
        bytes = nil
        defer {
            count = 0
            capacity = 0
        }
        return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
    }

    private func grow(to newCapacity: Int) {
        guard let grown = realloc(bytes, newCapacity) else {
            // Out of memory: nothing sensible is left to do for an answer this size.
            fatalError("cannot grow a document buffer to \(newCapacity) bytes")
        }
        bytes = grown
        capacity = newCapacity
    }
}
