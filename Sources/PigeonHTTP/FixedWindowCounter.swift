/// Fixed-window attempt counters per key, bounded in size: the pure core of the per-address
/// limits (no clock or lock of its own; the caller passes the time in seconds).
package struct FixedWindowCounter: Sendable {
    /// Attempts allowed per key and window.
    package let limit: Int
    package let windowSeconds: Double
    /// Keys tracked at most; when full, ended windows are dropped, then the oldest tenth.
    package let capacity: Int
    private var windows: [String: (start: Double, count: Int)] = [:]

    package init(limit: Int, windowSeconds: Double, capacity: Int = 100_000) {
        self.limit = limit
        self.windowSeconds = windowSeconds
        self.capacity = capacity
    }

    /// Counts an attempt by `key` at `now`: nil when allowed, else the seconds until its window ends.
    package mutating func take(_ key: String, now: Double) -> Int? {
        guard limit > 0 else { return nil }
        var window = windows[key] ?? (now, 0)
        if now - window.start >= windowSeconds { window = (now, 0) }
        window.count += 1
        if windows[key] == nil && windows.count >= capacity { makeRoom(now: now) }
        windows[key] = window
        guard window.count > limit else { return nil }
        return max(1, Int((window.start + windowSeconds - now).rounded(.up)))
    }

    /// Whether `key` has used up its window at `now` (nothing is counted): nil when it may go
    /// on, else the seconds until its window ends.
    package func exhausted(_ key: String, now: Double) -> Int? {
        guard limit > 0, let window = windows[key], now - window.start < windowSeconds, window.count >= limit else { return nil }
        return max(1, Int((window.start + windowSeconds - now).rounded(.up)))
    }

    /// Keys tracked now.
    var count: Int { windows.count }

    /// Drops ended windows and, if that freed too little, the oldest tenth: a scan once per tenth
    /// of the capacity at worst, never one per new key (a flood of new addresses is exactly when
    /// this runs).
    private mutating func makeRoom(now: Double) {
        windows = windows.filter { now - $0.value.start < windowSeconds }
        let target = capacity - max(1, capacity / 10)
        guard windows.count > target else { return }
        let oldest = windows.sorted { $0.value.start < $1.value.start }.prefix(windows.count - target)
        for (key, _) in oldest { windows[key] = nil }
    }
}
