#if canImport(Glibc)
import Glibc
#endif

/// Process-wide signal dispositions, set once however many components ask for them.
package enum ProcessSignals {
    /// Makes a write to a peer that hung up (an HTTP client, a push service, the bank, a child
    /// process) fail with EPIPE instead of ending the process. The `pigeon` executable calls this
    /// first thing; the components that write to sockets and pipes call it too, so that a
    /// process embedding them (a test run) is safe as well. The disposition is set once.
    package static func ignoreBrokenPipes() {
        _ = brokenPipesIgnored
    }

    private static let brokenPipesIgnored: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return true
    }()
}
