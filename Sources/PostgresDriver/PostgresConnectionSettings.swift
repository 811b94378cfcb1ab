internal import CLibPQ
import Foundation

/// Where and how to connect, as libpq keyword/value pairs.
///
/// Built from `dbUrl` in either form the gateway accepts — a libpq URI (`postgresql://…`,
/// or a `key=value` string) or the original product's JDBC URL
/// (`jdbc:postgresql://localhost/pigeon?user=…`) — with `dbUsername`/`dbPassword` filling what
/// the URL lacks. libpq itself parses the result, so anything libpq accepts works.
package struct PostgresConnectionSettings: Sendable, Equatable {
    package private(set) var parameters: [(keyword: String, value: String)]

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.parameters.elementsEqual(rhs.parameters) { $0.keyword == $1.keyword && $0.value == $1.value }
    }

    package init(url: String, username: String? = nil, password: String? = nil) throws(PostgresError) {
        let libpqForm = try Self.libpqForm(of: url)
        var parsed = try Self.parse(libpqForm)
        if let username, !parsed.contains(where: { $0.keyword == "user" }) {
            parsed.append(("user", username))
        }
        if let password, !parsed.contains(where: { $0.keyword == "password" }) {
            parsed.append(("password", password))
        }
        if !parsed.contains(where: { $0.keyword == "connect_timeout" }) {
            parsed.append(("connect_timeout", "5"))
        }
        if !parsed.contains(where: { $0.keyword == "application_name" }) {
            parsed.append(("application_name", "pigeon"))
        }
        // libpq's default (`prefer`) probes for a Kerberos credential cache on every connect; the
        // Kerberos library's locks are torn down at process exit, and a connect racing the exit
        // (a pool replacing a connection while the process stops) aborted the process. GSS
        // encryption is asked for in dbUrl (`gssencmode=prefer|require`) where it is used.
        if !parsed.contains(where: { $0.keyword == "gssencmode" }) {
            parsed.append(("gssencmode", "disable"))
        }
        // Several hosts name a primary and its standbys: the gateway writes, so it connects only
        // to the one that accepts writes, and after a failover finds the promoted standby.
        if let hosts = parsed.first(where: { $0.keyword == "host" || $0.keyword == "hostaddr" })?.value, hosts.contains(","),
           !parsed.contains(where: { $0.keyword == "target_session_attrs" }) {
            parsed.append(("target_session_attrs", "read-write"))
        }
        self.parameters = parsed
    }

    /// The value of a libpq keyword, if set.
    package func value(_ keyword: String) -> String? {
        parameters.first { $0.keyword == keyword }?.value
    }

    /// A description for logs: host, port, database and user, never the password.
    package var redacted: String {
        let shown = ["host", "hostaddr", "port", "dbname", "user"].compactMap { key in
            value(key).map { "\(key)=\($0)" }
        }
        return shown.joined(separator: " ")
    }

    /// Turns a JDBC URL into a libpq URI; other forms pass through.
    static func libpqForm(of url: String) throws(PostgresError) -> String {
        let jdbcPrefix = "jdbc:postgresql:"
        guard url.hasPrefix(jdbcPrefix) else { return url }
        var rest = String(url.dropFirst(jdbcPrefix.count))
        // jdbc:postgresql:dbname and jdbc:postgresql:/ are shorthands for localhost.
        if !rest.hasPrefix("//") { rest = "//localhost/" + rest.drop { $0 == "/" } }
        let location = String(rest.prefix { $0 != "?" })
        let query = rest.dropFirst(location.count + 1)
        var converted: [String] = []
        // pgjdbc: `ssl=true` verifies the server's certificate and host name (verify-full); an
        // explicit `sslmode` wins wherever it appears.
        var sslmode: String?
        var ssl: String?
        var validating = true
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            let key = parts[0]
            let value = parts.count > 1 ? parts[1] : ""
            switch key {
            case "user", "password", "sslcert", "sslkey", "sslrootcert", "options":
                converted.append("\(key)=\(value)")
            case "sslmode":
                sslmode = value
            case "ssl":
                ssl = value == "false" ? "disable" : "verify-full"
            case "sslfactory" where value == "org.postgresql.ssl.NonValidatingFactory":
                // pgjdbc's explicit opt-out of certificate checks.
                validating = false
            case "ApplicationName", "applicationName":
                converted.append("application_name=\(value)")
            case "connectTimeout", "loginTimeout":
                converted.append("connect_timeout=\(value)")
            case "currentSchema":
                converted.append("options=-csearch_path%3D\(value)")
            case "targetServerType":
                // pgjdbc's names for libpq's target_session_attrs.
                let attributes: [String: String] = ["any": "any", "primary": "read-write", "master": "read-write",
                                                    "secondary": "standby", "standby": "standby",
                                                    "preferSecondary": "prefer-standby", "preferStandby": "prefer-standby"]
                guard let attribute = attributes[value] else {
                    throw PostgresError(.badSettings, "targetServerType '\(value)' is not one of \(attributes.keys.sorted().joined(separator: ", "))")
                }
                converted.append("target_session_attrs=\(attribute)")
            default:
                throw PostgresError(
                    .badSettings,
                    "the JDBC parameter '\(key)' has no libpq equivalent; use a postgresql:// URL instead")
            }
        }
        if ssl == "verify-full" && !validating { ssl = "require" }
        if let mode = sslmode ?? ssl { converted.append("sslmode=\(mode)") }
        return "postgresql:" + location + (converted.isEmpty ? "" : "?" + converted.joined(separator: "&"))
    }

    private static func parse(_ text: String) throws(PostgresError) -> [(keyword: String, value: String)] {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(text, &errorMessage) else {
            let reason = errorMessage.map { String(cString: $0) } ?? "unparseable"
            if let errorMessage { PQfreemem(errorMessage) }
            throw PostgresError(
                .badSettings,
                "dbUrl is not a valid PostgreSQL URL: \(reason.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        defer { PQconninfoFree(options) }
        var result: [(keyword: String, value: String)] = []
        var cursor = options
        while let keyword = cursor.pointee.keyword {
            if let value = cursor.pointee.val {
                result.append((String(cString: keyword), String(cString: value)))
            }
            cursor += 1
        }
        return result
    }
}

