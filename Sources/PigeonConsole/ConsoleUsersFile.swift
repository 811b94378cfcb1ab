import Foundation
import PigeonCore
import PigeonCrypto
import PigeonDomain
import Synchronization

/// `consoleUsersFile`: one operator a line, `name:hash:role` (CONTRACT §10), the hash as
/// `htpasswd -B`, `mkpasswd` or `pigeon hash-password` write it (bcrypt, yescrypt, SHA-512
/// crypt), checked by the system's crypt library. Blank lines and lines starting with `#` are
/// skipped. Re-read on SIGHUP: a file that no longer reads keeps the accounts read before.
package final class ConsoleUsersFile: ConsoleAccountSource, Sendable {
    /// One operator's line.
    package struct Account: Sendable, Equatable {
        package var name: String
        package var hash: String
        package var role: ConsoleRole
    }

    /// The file is small: at most this many bytes and accounts.
    package static let maximumBytes = 1 << 20
    package static let maximumAccounts = 10_000

    package let path: String
    private let accounts: Mutex<[String: Account]>
    /// A hash of the same method and cost as the accounts', checked for an unknown name so it
    /// takes as long as a wrong password.
    private let decoy: Mutex<String>

    /// Reads the file at `path`; throws ``ConfigurationError``-like text naming the line at fault.
    package init(path: String) throws(ConsoleUsersFileError) {
        self.path = path
        let read = try Self.read(path: path)
        accounts = Mutex(read)
        decoy = Mutex(Self.decoy(for: read))
    }

    /// Reads the file again; on failure the accounts read before stay and the error is thrown.
    /// Returns how many accounts it holds now.
    @discardableResult
    package func reload() throws(ConsoleUsersFileError) -> Int {
        let read = try Self.read(path: path)
        accounts.withLock { $0 = read }
        decoy.withLock { $0 = Self.decoy(for: read) }
        return read.count
    }

    package var count: Int { accounts.withLock { $0.count } }

    package func signIn(username: String, password: String) async -> ConsoleSignIn {
        guard let account = accounts.withLock({ $0[username] }) else {
            PasswordHash.burn(password, like: decoy.withLock { $0 })
            return .refused
        }
        return PasswordHash.verify(password, hash: account.hash) ? .accepted(ConsoleOperator(name: account.name, role: account.role)) : .refused
    }

    private static func read(path: String) throws(ConsoleUsersFileError) -> [String: Account] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ConsoleUsersFileError(path: path, line: nil, "cannot be read") }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumBytes + 1)) ?? Data()
        guard data.count <= maximumBytes else { throw ConsoleUsersFileError(path: path, line: nil, "is larger than \(maximumBytes) bytes") }
        guard let text = String(data: data, encoding: .utf8) else { throw ConsoleUsersFileError(path: path, line: nil, "is not UTF-8 text") }
        return try parse(text, path: path)
    }

    /// The accounts `text` holds; throws naming the first line that is not `name:hash:role`.
    package static func parse(_ text: String, path: String = "consoleUsersFile") throws(ConsoleUsersFileError) -> [String: Account] {
        var accounts: [String: Account] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
            if line.isEmpty || line.hasPrefix("#") { continue }
            let number = index + 1
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count >= 3 else { throw ConsoleUsersFileError(path: path, line: number, "is not name:hash:role") }
            // A hash may not hold a colon; the role is the last field, the name the first.
            let name = String(fields[0]), hash = fields[1..<(fields.count - 1)].joined(separator: ":"), roleText = String(fields[fields.count - 1])
            guard !name.isEmpty, name.utf8.count <= 64, !ControlCharacters.present(in: name), !name.contains(" ") else {
                throw ConsoleUsersFileError(path: path, line: number, "has a name that is empty, longer than 64 bytes, or holds spaces or control characters")
            }
            guard PasswordHash.isAccepted(hash) else {
                throw ConsoleUsersFileError(path: path, line: number, "(\(name)) has a hash that is not bcrypt ($2b$/$2y$), yescrypt ($y$) or SHA-512 crypt ($6$)")
            }
            guard let role = ConsoleRole(rawValue: roleText) else {
                throw ConsoleUsersFileError(path: path, line: number, "(\(name)) has role \"\(LogText.escaped(roleText, limit: 20))\"; use viewer, support or admin")
            }
            guard accounts[name] == nil else { throw ConsoleUsersFileError(path: path, line: number, "names \(name) a second time") }
            accounts[name] = Account(name: name, hash: hash, role: role)
            guard accounts.count <= maximumAccounts else { throw ConsoleUsersFileError(path: path, line: number, "is past \(maximumAccounts) accounts") }
        }
        return accounts
    }

    /// The first account's hash, or a fixed yescrypt hash when there is none.
    private static func decoy(for accounts: [String: Account]) -> String {
        accounts.values.min { $0.name < $1.name }?.hash ?? "$y$j9T$Zm9vYmFyYmF6cXV4$mCfFVdvAdSFZUWueyyR1ZFnKEWnB0j.Zwqo49CU0.b1"
    }
}

/// Why `consoleUsersFile` could not be read, naming the file and the line.
package struct ConsoleUsersFileError: Error, CustomStringConvertible, Sendable {
    package let description: String

    init(path: String, line: Int?, _ problem: String) {
        description = line.map { "\(path), line \($0), \(problem)" } ?? "\(path) \(problem)"
    }
}
