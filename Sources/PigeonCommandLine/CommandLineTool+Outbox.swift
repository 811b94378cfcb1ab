import Foundation
import PigeonDomain
import PigeonServer
import PigeonCore
import PigeonStore

extension CommandLineTool {
    static let outboxHelp = """
        pigeon outbox list --config FILE
        pigeon outbox retry --config FILE (--id ID[,ID…] | --all) [--reason TEXT]

        Reports to the bank wait in the outbox until it takes them; those it refused for longer than
        reportMaxAgeHours leave it for the dead letters. 'list' prints both: the waiting ones (id,
        kind, notification, users, attempts, written, next attempt, last error; the first 500) and
        the dead letters (id, kind, notification, users, attempts, written, died, last error), or
        "none". 'retry' puts dead letters back into the outbox, due now, for the running gateways
        to send; an id that is not a dead letter is named and the exit status is 1. The console's
        audit trail records each retry: the operating-system user who ran it (sudo's caller when
        run through sudo), the ids and the reason.
        """

    func outbox(_ options: [String]) async -> Int32 {
        guard let action = options.first, ["list", "retry"].contains(action) else {
            if options.first == "--help" || options.first == "-h" {
                print(Self.outboxHelp)
                return 0
            }
            printError("pigeon outbox: say 'list' or 'retry'; run 'pigeon outbox --help'")
            return 2
        }
        var rest = Array(options.dropFirst())
        var ids: [Int64]?
        var all = false
        var reason = ""
        if let index = rest.firstIndex(of: "--reason") {
            guard index + 1 < rest.count, rest[index + 1].count <= 200 else {
                printError("pigeon outbox: --reason needs a value of at most 200 characters")
                return 2
            }
            reason = rest[index + 1]
            rest.removeSubrange(index...index + 1)
        }
        if let index = rest.firstIndex(of: "--all") {
            all = true
            rest.remove(at: index)
        }
        if let index = rest.firstIndex(of: "--id") {
            guard index + 1 < rest.count else {
                printError("pigeon outbox: --id needs a value")
                return 2
            }
            let parsed = rest[index + 1].split(separator: ",").map { Int64($0.trimmingCharacters(in: .whitespaces)) }
            guard !parsed.isEmpty, parsed.allSatisfy({ $0 != nil }) else {
                printError("pigeon outbox: --id takes report ids separated by commas, got '\(rest[index + 1])'")
                return 2
            }
            ids = parsed.compactMap { $0 }
            rest.removeSubrange(index...index + 1)
        }
        if action == "retry" && (ids == nil) == !all {
            printError("pigeon outbox retry: give either --id ID[,ID…] or --all")
            return 2
        }
        if action == "list" && (ids != nil || all) {
            printError("pigeon outbox list: takes only --config")
            return 2
        }
        return await withConfiguration("outbox \(action)", rest, help: Self.outboxHelp) { configuration, logger, _ in
            do {
                let pool = try Gateway.openPool(configuration, size: 1, logger: logger)
                defer { pool.close() }
                let outbox = Outbox(pool: pool)
                if action == "list" {
                    let waiting = try await ConsoleStore(pool: pool, identifiers: configuration.identifiers).waitingReports(offset: 0, limit: 500)
                    print("Waiting to be sent (\(waiting.total)):")
                    print(waiting.page.isEmpty ? "none" : Self.table(waiting.page))
                    let dead = try await outbox.deadLetters()
                    print("\nDead letters (\(dead.count)):")
                    print(dead.isEmpty ? "none" : Self.table(dead))
                } else {
                    let moved = try await outbox.requeue(all ? nil : ids)
                    print("re-queued \(moved.count) report\(moved.count == 1 ? "" : "s")")
                    try await PostgresAuditTrail(pool: pool).record(AuditEntry(
                        operatorName: Self.commandLineOperator(), role: "command line", address: "local", action: .outboxRetry,
                        target: all ? "all dead letters" : "reports " + (ids ?? []).map(String.init).joined(separator: ","), reason: reason,
                        outcome: "re-queued " + (moved.isEmpty ? "none" : moved.map(String.init).joined(separator: ","))))
                    let missing = (ids ?? []).filter { !moved.contains($0) }
                    if !missing.isEmpty {
                        printError("pigeon outbox retry: not dead letters (unknown, or still waiting to be sent): \(missing.map(String.init).joined(separator: ", "))")
                        return 1
                    }
                }
                return 0
            } catch {
                printError("pigeon outbox \(action): \(error)")
                return 1
            }
        }
    }

    /// Who runs this command, as the audit trail names them: sudo's caller, else the login user.
    static func commandLineOperator() -> String {
        let environment = ProcessInfo.processInfo.environment
        let name = environment["SUDO_USER"] ?? environment["LOGNAME"] ?? environment["USER"] ?? "uid \(getuid())"
        return "os:" + name
    }

    /// Waiting reports as tab-separated lines under a header.
    static func table(_ reports: [ConsoleStore.WaitingReport]) -> String {
        reportTable(lastTime: "next attempt", reports.map {
            ReportRow(id: $0.id, kind: $0.kind, subject: $0.subject, users: $0.concerned, attempts: $0.attempts,
                      written: $0.createdAt, lastTime: $0.nextAttemptAt, lastError: $0.lastError)
        })
    }

    /// Dead letters as tab-separated lines under a header.
    static func table(_ reports: [DeadReport]) -> String {
        reportTable(lastTime: "died", reports.map {
            ReportRow(id: $0.id, kind: $0.kind, subject: $0.notificationId, users: $0.users, attempts: $0.attempts,
                      written: $0.createdAt, lastTime: $0.diedAt, lastError: $0.lastError)
        })
    }

    /// One report as `outbox list` prints it, waiting or dead.
    struct ReportRow {
        var id: Int64
        var kind: String
        var subject: String
        var users: [String]
        var attempts: Int
        var written: Date
        /// The next attempt of a waiting report, when a dead one died.
        var lastTime: Date
        var lastError: String?
    }

    static func reportTable(lastTime: String, _ rows: [ReportRow]) -> String {
        let format = Date.ISO8601FormatStyle()
        var lines = ["id\tkind\tnotification\tusers\tattempts\twritten\t\(lastTime)\tlast error"]
        for row in rows {
            let users = row.users.prefix(5).joined(separator: ",") + (row.users.count > 5 ? ",… (\(row.users.count))" : "")
            lines.append([String(row.id), row.kind, LogText.escaped(row.subject, limit: 80), LogText.escaped(users, limit: 200),
                          String(row.attempts), row.written.formatted(format), row.lastTime.formatted(format),
                          LogText.escaped(row.lastError ?? "", limit: 200)].joined(separator: "\t"))
        }
        return lines.joined(separator: "\n")
    }
}
