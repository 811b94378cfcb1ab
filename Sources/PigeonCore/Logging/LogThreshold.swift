import Synchronization

/// A log level that loggers of one family read at each call and that can be changed while they
/// run (one relaxed atomic load per log call).
final class LogThreshold: Sendable {
    private let raw: Atomic<Int>

    init(_ level: Logger.Level) {
        raw = Atomic(level.rawValue)
    }

    var level: Logger.Level {
        Logger.Level(rawValue: raw.load(ordering: .relaxed)) ?? .info
    }

    func set(_ level: Logger.Level) {
        raw.store(level.rawValue, ordering: .relaxed)
    }
}
