extension Duration {
    /// The duration in seconds, with its fraction: for clocks, timers and SQL intervals that
    /// take a `Double`.
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
