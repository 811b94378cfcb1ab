extension Duration {
    /// The duration in seconds, with its fraction: for clocks, timers and SQL intervals that
    /// take a `Double`.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
