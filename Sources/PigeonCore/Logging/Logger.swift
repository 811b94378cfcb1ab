import Foundation

/// A small value-type logger in the shape of swift-log: a label, a level threshold, metadata that
/// travels with the value, and a ``LogHandler`` that writes. Messages are autoclosures, so a
/// suppressed debug line costs nothing.
package struct Logger: Sendable {
    /// Severity, ordered from the most verbose.
    package enum Level: Int, Sendable, Comparable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical

        package static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        /// Parses `info`, `WARNING`, … (case-insensitive).
        package init?(name: String) {
            guard let level = Level.allCases.first(where: { "\($0)" == name.lowercased() }) else {
                return nil
            }
            self = level
        }
    }

    package typealias Metadata = [String: String]

    package private(set) var label: String
    package var metadata: Metadata
    private let handler: any LogHandler
    /// Shared with every logger made from this one by ``withLabel(_:)``.
    private var threshold: LogThreshold

    package init(label: String, level: Level = .info, handler: any LogHandler) {
        self.label = label
        self.metadata = [:]
        self.handler = handler
        self.threshold = LogThreshold(level)
    }

    /// The least severe level written. Setting it affects this logger alone (a value, as
    /// before); ``changeLevel(to:)`` changes it for the whole family.
    package var level: Level {
        get { threshold.level }
        set { threshold = LogThreshold(newValue) }
    }

    /// Changes the level of this logger and of every logger made from it with
    /// ``withLabel(_:)``, at once, wherever they were copied to (SIGHUP applies a changed
    /// `logLevel` this way).
    package func changeLevel(to level: Level) {
        threshold.set(level)
    }

    /// The same logger writing under another label (sharing its level: see ``changeLevel(to:)``).
    package func withLabel(_ label: String) -> Logger {
        var copy = self
        copy.label = label
        return copy
    }

    /// A logger that drops everything; for tests and tools that must stay quiet.
    package static let silent = Logger(label: "silent", level: .critical, handler: DiscardLogHandler())

    package func log(
        _ level: Level, _ message: @autoclosure () -> String, metadata extra: @autoclosure () -> Metadata = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        guard level >= threshold.level else { return }
        let extra = extra()
        var merged = extra.isEmpty ? metadata : metadata.merging(extra) { _, new in new }
        if let request = RequestContext.id, merged["request"] == nil { merged["request"] = request }
        handler.write(
            LogRecord(
                date: Date(), level: level, label: label, message: message(), metadata: merged,
                file: file, line: line))
    }

    package func trace(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:], file: String = #fileID, line: UInt = #line) {
        log(.trace, message(), metadata: metadata(), file: file, line: line)
    }
    package func debug(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:], file: String = #fileID, line: UInt = #line) {
        log(.debug, message(), metadata: metadata(), file: file, line: line)
    }
    package func info(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:], file: String = #fileID, line: UInt = #line) {
        log(.info, message(), metadata: metadata(), file: file, line: line)
    }
    package func notice(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:], file: String = #fileID, line: UInt = #line) {
        log(.notice, message(), metadata: metadata(), file: file, line: line)
    }
    package func warning(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:], file: String = #fileID, line: UInt = #line) {
        log(.warning, message(), metadata: metadata(), file: file, line: line)
    }
    package func error(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:], file: String = #fileID, line: UInt = #line) {
        log(.error, message(), metadata: metadata(), file: file, line: line)
    }
    package func critical(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:], file: String = #fileID, line: UInt = #line) {
        log(.critical, message(), metadata: metadata(), file: file, line: line)
    }
}

/// One log line before formatting.
package struct LogRecord: Sendable {
    package var date: Date
    package var level: Logger.Level
    package var label: String
    package var message: String
    package var metadata: Logger.Metadata
    package var file: String
    package var line: UInt
}

/// Where log records go.
package protocol LogHandler: Sendable {
    func write(_ record: LogRecord)
}

/// Drops every record.
package struct DiscardLogHandler: LogHandler {
    package init() {}
    package func write(_ record: LogRecord) {}
}
