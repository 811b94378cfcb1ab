import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process's own figures under Prometheus' standard names (what client libraries export
/// for every process), read from `/proc` at each scrape: CPU time, resident memory, open file
/// descriptors (every connection is one) and when the process started.
package enum ProcessMetrics {
    /// One reading.
    package struct Sample: Equatable, Sendable {
        package var cpuSeconds: Double
        package var residentBytes: Double
        package var startTimeSeconds: Double
        package var openFileDescriptors: Double
    }

    /// Sets the four families from `/proc/self` before every render of `registry`.
    package static func collect(into registry: MetricsRegistry) {
        registry.addCollector { registry in
            guard let sample = read() else { return }
            registry.set(.processCPUSecondsTotal, to: sample.cpuSeconds)
            registry.set(.processResidentMemoryBytes, to: sample.residentBytes)
            registry.set(.processStartTimeSeconds, to: sample.startTimeSeconds)
            registry.set(.processOpenFDs, to: sample.openFileDescriptors)
        }
    }

    /// This process's figures, or nil where `/proc` cannot be read.
    package static func read() -> Sample? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let system = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
        return parse(stat: stat, systemStat: system, openFileDescriptors: descriptors.count,
                     ticksPerSecond: Double(sysconf(Int32(_SC_CLK_TCK))), pageSize: Double(sysconf(Int32(_SC_PAGESIZE))))
    }

    /// Reads `/proc/self/stat` (fields after the command name, which may hold spaces and
    /// parentheses: utime and stime in ticks, starttime in ticks after boot, rss in pages) and the
    /// boot time (`btime`) from `/proc/stat`.
    package static func parse(stat: String, systemStat: String, openFileDescriptors: Int, ticksPerSecond: Double, pageSize: Double) -> Sample? {
        guard let close = stat.lastIndex(of: ")"), ticksPerSecond > 0 else { return nil }
        // Field 3 (state) is the first after the name; field N is at index N - 3.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 21, let user = Double(fields[11]), let system = Double(fields[12]),
              let started = Double(fields[19]), let pages = Double(fields[21]),
              let bootLine = systemStat.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }),
              let boot = Double(bootLine.dropFirst("btime ".count).trimmingCharacters(in: .whitespaces)) else { return nil }
        return Sample(cpuSeconds: (user + system) / ticksPerSecond, residentBytes: pages * pageSize,
                      startTimeSeconds: boot + started / ticksPerSecond, openFileDescriptors: Double(openFileDescriptors))
    }
}
