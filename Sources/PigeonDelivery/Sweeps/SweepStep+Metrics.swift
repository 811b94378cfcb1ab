import PigeonCore
import PigeonDomain

extension SweepStep {
    /// Records the erasures of a step (``Metric/confidentialContentsErasedTotal``).
    func recordErasures(_ metrics: MetricsRegistry) {
        if erasedFinal > 0 { metrics.increment(Metric.confidentialContentsErasedTotal, labels: ["reason": "final"], by: Double(erasedFinal)) }
        if erasedExpired > 0 { metrics.increment(Metric.confidentialContentsErasedTotal, labels: ["reason": "expired"], by: Double(erasedExpired)) }
    }
}
