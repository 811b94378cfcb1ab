import PigeonCore
import PigeonStore
import PostgresDriver

/// The database pools' state, read at every scrape: how many connections each pool has, how
/// many run a query, how many queries wait for one, how many were refused for a full queue, and
/// how long the queries started waited for a connection (`rate(wait_seconds) / rate(queries)`:
/// the mean wait).
enum DatabasePoolMetrics {
    static func collect(pools: [(name: String, pool: PostgresPool)], into metrics: MetricsRegistry) {
        metrics.addCollector { metrics in
            for (name, pool) in pools {
                let statistics = pool.statistics
                metrics.set(Metric.databasePoolConnections, labels: ["pool": name], to: Double(statistics.size))
                metrics.set(Metric.databasePoolBusy, labels: ["pool": name], to: Double(statistics.busy))
                metrics.set(Metric.databasePoolWaiting, labels: ["pool": name], to: Double(statistics.waiting))
                metrics.set(Metric.databasePoolOverloaded, labels: ["pool": name], to: Double(statistics.overloaded))
                metrics.set(Metric.databasePoolQueries, labels: ["pool": name], to: Double(statistics.started))
                metrics.set(Metric.databasePoolWaitSeconds, labels: ["pool": name], to: statistics.waitedSeconds)
            }
        }
    }
}
