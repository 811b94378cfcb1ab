import Foundation
import PigeonConfiguration
import PigeonConsole

extension Gateway {
    /// What `check-config` says of the console's accounts: the users file read as `serve` reads it
    /// (a line at fault is an error), and where the directory is. Throws what `serve` would refuse.
    package static func checkConsole(_ configuration: GatewayConfiguration) throws -> [String] {
        guard configuration.console.isConfigured else { return ["console: off (no consoleUsersFile, consoleLdapUrl or consoleUsername)"] }
        var lines: [String] = []
        if let path = configuration.console.usersFile {
            do {
                let file = try ConsoleUsersFile(path: path)
                lines.append("console: \(file.count) account\(file.count == 1 ? "" : "s") in \(path)")
            } catch {
                throw StartError(description: "consoleUsersFile: \(error)")
            }
        }
        let ldap = configuration.console.ldap
        if let url = ldap.url {
            lines.append("console: the directory at \(url)\(ldap.startTLS ? " (StartTLS)" : ""), \(ldap.groups.count) role group\(ldap.groups.count == 1 ? "" : "s")")
        }
        if configuration.console.username != nil { lines.append("console: the single admin account \(configuration.console.username ?? "")") }
        if !configuration.consoleIsServed { lines.append("console: not served (set bankListen: the console never faces phones)") }
        return lines
    }
}
