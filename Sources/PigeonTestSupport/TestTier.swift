import Foundation

/// The test tiers, chosen with the environment variable `PIGEON_TEST_TIER` (`unit`,
/// `integration` or `system`; unset: every tier). Each tier includes the ones below it:
///
/// - **unit**: no PostgreSQL, no sockets, no processes — pure types, the engine on fakes, the
///   request side through the router harness. `scripts/test-unit.sh` runs it in seconds, with a
///   tripwire (`scripts/tripwire`) that refuses a network socket or a process and names the test.
/// - **integration**: a real PostgreSQL, real listeners and HTTP/2 clients, the simulator and
///   child processes such as `openssl` and `curl`.
/// - **system**: whole gateways killed with -9, PostgreSQL restarted and failed over, sends of
///   millions, push services holding streams for minutes; run one group at a time.
///
/// Suites above the unit tier say so with `.enabled(if: TestTier.runsIntegration, …)` or
/// `TestTier.runsSystem`; ``TestDatabase/isAvailable`` is false in the unit tier.
package enum TestTier: Int, Comparable, Sendable {
    case unit, integration, system

    package static let environmentVariable = "PIGEON_TEST_TIER"

    /// The highest tier this run includes.
    package static var selected: TestTier {
        switch ProcessInfo.processInfo.environment[environmentVariable] {
        case "unit": .unit
        case "integration": .integration
        default: .system
        }
    }

    /// Whether integration suites run (PostgreSQL, sockets, processes).
    package static var runsIntegration: Bool { selected >= .integration }
    /// Whether system suites run (crashes, failover, millions of recipients).
    package static var runsSystem: Bool { selected >= .system }

    /// The time limit of each test of a unit-tier suite, in minutes (`.timeLimit(.minutes(…))`):
    /// one in a unit-tier run, where every test takes milliseconds and one that hangs must fail
    /// fast; ten when the whole suite shares two cores with PostgreSQL and the simulator.
    package static var unitTestMinutes: Int { selected == .unit ? 1 : 10 }

    package static func < (lhs: TestTier, rhs: TestTier) -> Bool { lhs.rawValue < rhs.rawValue }
}
