import Foundation
import Synchronization

/// Writes one line per record to standard error:
/// `2026-11-30T12:00:00.123Z INFO pigeon.http: message key=value`.
/// Lines from several threads never interleave.
package final class StreamLogHandler: LogHandler {
    private let lock = Mutex(())

    package init() {}

    package func write(_ record: LogRecord) {
        let line = Self.format(record) + "\n"
        lock.withLock { _ in
            FileHandle.standardError.write(Data(line.utf8))
        }
    }

    /// The text of one line, without the newline. Metadata keys are sorted so lines are stable.
    package static func format(_ record: LogRecord) -> String {
        var text = "\(record.date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))) "
        text += "\("\(record.level)".uppercased()) \(record.label): \(LogText.escaped(record.message, limit: 4096))"
        for key in record.metadata.keys.sorted() {
            text += " \(key)=\(quoteIfNeeded(record.metadata[key] ?? ""))"
        }
        return text
    }

    /// A metadata value: control characters escaped (values may come from clients), quoted when
    /// it holds spaces, quotes or `=`.
    private static func quoteIfNeeded(_ value: String) -> String {
        let visible = LogText.escaped(value)
        guard visible.isEmpty || visible.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" }) else {
            return visible
        }
        let escaped = visible.replacingOccurrences(of: "\"", with: "\\\"")
        return "\"\(escaped)\""
    }
}

/// Keeps records in memory; tests read them back.
package final class InMemoryLogHandler: LogHandler {
    private let storage = Mutex<[LogRecord]>([])

    package init() {}

    package func write(_ record: LogRecord) {
        storage.withLock { $0.append(record) }
    }

    /// Every record written so far.
    package var records: [LogRecord] { storage.withLock { $0 } }
}
