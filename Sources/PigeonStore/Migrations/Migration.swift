import Foundation
import PostgresDriver

/// One schema change: a file `NNNN_name.sql` of `migrations/`, applied once, in version order.
package struct Migration: Sendable, Equatable {
    package var version: Int
    package var name: String
    package var sql: String

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Reads every `NNNN_name.sql` in `directory`, sorted by version. Two files with one version,
    /// or a `.sql` file without a version prefix, is an error.
    package static func load(from directory: URL) throws(PostgresError) -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw PostgresError(.migrationFailed, "cannot read migrations folder \(directory.path): \(error.localizedDescription)")
        }
        var migrations: [Migration] = []
        for name in names.sorted() where name.hasSuffix(".sql") {
            let stem = name.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else {
                throw PostgresError(.migrationFailed, "migration file '\(name)' must be named NNNN_description.sql")
            }
            let sql: String
            do {
                sql = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            } catch {
                throw PostgresError(.migrationFailed, "cannot read migration \(name): \(error.localizedDescription)")
            }
            if let clash = migrations.first(where: { $0.version == version }) {
                throw PostgresError(.migrationFailed, "migrations \(clash.name) and \(name) share version \(version)")
            }
            migrations.append(Migration(version: version, name: String(stem[stem.index(after: underscore)...]), sql: sql))
        }
        return migrations.sorted { $0.version < $1.version }
    }

    /// Finds the `migrations` folder from the executable's real location (never from the working
    /// directory, where any folder of that name could stand): `../share/pigeon/migrations` of an
    /// installed binary, a `migrations` folder in one of its parents (a checkout running
    /// `.build/…/pigeon`), or `/usr/share/pigeon/migrations`.
    package static func locateDirectory(executablePath: String? = nil) -> URL? {
        let executable = executablePath.map { URL(fileURLWithPath: $0) } ?? URL(fileURLWithPath: "/proc/self/exe")
        var directory = executable.resolvingSymlinksInPath().deletingLastPathComponent()
        var candidates = [directory.deletingLastPathComponent().appendingPathComponent("share/pigeon/migrations")]
        for _ in 0..<6 {
            candidates.append(directory.appendingPathComponent("migrations"))
            directory = directory.deletingLastPathComponent()
        }
        candidates.append(URL(fileURLWithPath: "/usr/share/pigeon/migrations"))
        return candidates.first { url in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
    }
}
