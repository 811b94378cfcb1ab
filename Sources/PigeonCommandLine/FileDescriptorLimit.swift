import Foundation
import PigeonConfiguration
import PigeonCore
import PigeonServer
#if canImport(Glibc)
import Glibc
#endif

/// Every connection is a file descriptor: `serve` raises the process's soft limit to its hard
/// limit, and warns when the listeners' connection limits cannot fit in it.
enum FileDescriptorLimit {
    /// Descriptors kept for everything that is not a client connection (database, push
    /// services, the bank, logs).
    static let reserve = 256

    static func raise(for http: GatewayConfiguration.HTTP, logger: Logger) {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(RLIMIT_NOFILE_VALUE, &raised) == 0 { limit = raised }
        }
        let needed = http.connectionLimit + (http.bank == nil ? 0 : http.bankConnectionLimit) + reserve
        if limit.rlim_cur != rlim_t.max, limit.rlim_cur < rlim_t(needed) {
            logger.warning("the open-file limit is below what the connection limits need; raise it (LimitNOFILE=) or lower httpConnectionLimit", metadata: [
                "limit": String(limit.rlim_cur), "needed": String(needed)])
        }
    }

    #if canImport(Glibc)
    private static let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #endif
}
