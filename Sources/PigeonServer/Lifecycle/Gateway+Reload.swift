import Foundation
import PigeonConfiguration
import PigeonConsole
import PigeonCore

extension Gateway {
    /// What a reload (SIGHUP) did.
    package struct Reload: Sendable {
        /// Each HTTPS listener's certificate: reloaded, or kept and why.
        package var certificates: [CertificateReload]
        /// The log level now in force when the re-read `server.conf` changed it.
        package var logLevel: Logger.Level?
        /// Keys changed in `server.conf` since start that apply only at the next start.
        package var keysForNextStart: [String]
        /// Why `server.conf` could not be re-read (the running settings stay).
        package var configurationError: String?
        /// `consoleUsersFile`: how many accounts it holds now, or why it was not re-read (the
        /// accounts read before stay); nil without one.
        package var consoleUsers: Result<Int, ConsoleUsersFileError>?
    }

    /// What SIGHUP (`systemctl reload`) does: reads the HTTPS certificate files again (see
    /// ``reloadCertificates()``), applies a changed `logLevel` from the re-read `server.conf` to
    /// every logger of the gateway at once, and logs the keys changed since start that only a
    /// restart applies (by name; values may be secrets). A `server.conf` that no longer parses
    /// changes nothing and is logged with its reason.
    @discardableResult
    package func reload(rereading reread: Result<GatewayConfiguration, ConfigurationError>) -> Reload {
        var outcome = Reload(certificates: reloadCertificates(), logLevel: nil, keysForNextStart: [], configurationError: nil)
        if let consoleUsers {
            outcome.consoleUsers = Result { () throws(ConsoleUsersFileError) in try consoleUsers.reload() }
            switch outcome.consoleUsers {
            case .success(let count): logger.notice("consoleUsersFile re-read", metadata: ["path": consoleUsers.path, "accounts": String(count)])
            case .failure(let error): logger.error("consoleUsersFile not re-read; the accounts read before stay", metadata: ["reason": error.description])
            case nil: break
            }
        }
        switch reread {
        case .failure(let error):
            outcome.configurationError = error.description
            logger.error("server.conf not re-read; the running settings stay", metadata: ["reason": error.description])
        case .success(let newer):
            // Certificate files are read again whatever changed; their paths are not.
            outcome.keysForNextStart = configuration.keysChanged(in: newer).filter { $0 != "logLevel" }
            if !outcome.keysForNextStart.isEmpty {
                logger.warning("server.conf changed keys that apply at the next start", metadata: ["keys": outcome.keysForNextStart.joined(separator: ", ")])
            }
            if newer.logLevel != logger.level { outcome.logLevel = newer.logLevel }
        }
        logger.notice("reload done", metadata: [
            "certificates": outcome.certificates.isEmpty ? "none (no HTTPS listener)" : outcome.certificates.map { "\($0.listener): \($0.error == nil ? "reloaded" : "kept")" }.joined(separator: ", "),
            "server.conf": outcome.configurationError != nil ? "not re-read" : outcome.keysForNextStart.isEmpty ? "re-read" : "re-read; \(outcome.keysForNextStart.count == 1 ? "1 key waits" : "\(outcome.keysForNextStart.count) keys wait") for the next start"])
        // Last, so that the lines above are written at the level they were asked under.
        if let level = outcome.logLevel {
            logger.notice("log level changed", metadata: ["from": "\(logger.level)", "to": "\(level)"])
            logger.changeLevel(to: level)
        }
        return outcome
    }
}
