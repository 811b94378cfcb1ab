internal import CLibPQ
import Foundation

/// One libpq connection. Blocking: it is driven by exactly one ``PostgresPool`` worker thread at a
/// time and never from the Swift cooperative pool. Every statement is parametrised.
package final class PostgresConnection: @unchecked Sendable {
    // @unchecked: the pool hands a connection to one job on one thread at a time, so the libpq
    // handle is never used concurrently.
    private let handle: OpaquePointer
    /// Statements sent since ``beginJob()``; lets the pool tell whether a failed job may be retried.
    private(set) var statementsInJob = 0
    /// Server-side prepared statements by SQL text: each statement is planned once per connection.
    private var prepared: [String: String] = [:]
    /// Beyond this many distinct statements, new ones run unprepared (a bound, not a cache).
    private static let maxPreparedStatements = 256

    /// Opens a connection; throws ``PostgresError/Code/connectionFailed`` with libpq's reason.
    package init(settings: PostgresConnectionSettings) throws(PostgresError) {
        let keywords = settings.parameters.map { strdup($0.keyword) } + [nil]
        let values = settings.parameters.map { strdup($0.value) } + [nil]
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let connection = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordBuffer in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valueBuffer in
                PQconnectdbParams(keywordBuffer.baseAddress, valueBuffer.baseAddress, 0)
            }
        }
        guard let connection else {
            throw PostgresError(.connectionFailed, "out of memory creating a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let reason = Self.lastError(connection)
            PQfinish(connection)
            throw PostgresError(.connectionFailed, "\(reason) [\(settings.redacted)]")
        }
        // Server notices ("relation already exists, skipping") are not errors; keep them off stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        self.handle = connection
    }

    deinit {
        PQfinish(handle)
    }

    /// True while libpq believes the connection usable.
    /// Connected, and not left in pipeline mode (a pipeline that could not be drained leaves the
    /// connection there, where every ordinary statement fails): the pool drops one that is not.
    package var isUsable: Bool { isConnected && PQpipelineStatus(handle) == PQ_PIPELINE_OFF }

    /// The server connection is up (whatever mode it is in): tells a statement's error from a lost connection.
    private var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    func beginJob() { statementsInJob = 0 }

    /// Runs one parametrised statement written with `$1`, `$2`, … and its parameters in order.
    /// `nil` parameters are SQL NULL; everything travels as text. Each distinct statement is
    /// prepared on first use and executed by name afterwards. New code writes a ``PostgresQuery``
    /// (`query("… \(value)")`): the label keeps an interpolated literal from ever being read as
    /// SQL text here.
    @discardableResult
    package func query(sql: String, _ parameters: [String?] = []) throws(PostgresError) -> PostgresRows {
        statementsInJob += 1
        let name = try preparedName(for: sql, parameterCount: parameters.count)
        let copies = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let result = copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { buffer in
            if let name {
                PQexecPrepared(handle, name, Int32(parameters.count), buffer.baseAddress, nil, nil, 0)
            } else {
                PQexecParams(handle, sql, Int32(parameters.count), nil, buffer.baseAddress, nil, nil, 0)
            }
        }
        return try collect(result, sql: sql)
    }

    /// The prepared statement's name, preparing it now if needed; `nil` for statements that run
    /// unprepared (transaction control, or once the bound is reached).
    private func preparedName(for sql: String, parameterCount: Int) throws(PostgresError) -> String? {
        if let name = prepared[sql] { return name }
        guard parameterCount > 0, prepared.count < Self.maxPreparedStatements else { return nil }
        let name = "pigeon_\(prepared.count + 1)"
        _ = try collect(PQprepare(handle, name, sql, Int32(parameterCount), nil), sql: sql)
        prepared[sql] = name
        return name
    }

    /// Runs SQL text that may hold several statements and no parameters (migrations).
    package func execute(script: String) throws(PostgresError) {
        statementsInJob += 1
        _ = try collect(PQexec(handle, script), sql: "<script>")
    }

    /// Runs `body` inside BEGIN … COMMIT; rolls back if it throws.
    package func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try query("BEGIN")
        do {
            let value = try body(self)
            try query("COMMIT")
            return value
        } catch {
            if isUsable { _ = try? query("ROLLBACK") }
            throw error
        }
    }

    /// Runs `statements` as one transaction in one round trip: BEGIN, the statements and COMMIT
    /// go out together (libpq's pipeline mode) and the server runs them in order, each with its
    /// own snapshot as usual — so a lock taken by one statement holds for those after it. Under
    /// load every round trip waits for two processes to be scheduled; a short transaction
    /// written this way waits once instead of once per statement. Answers each statement's rows.
    /// A statement that fails rolls the whole transaction back and is thrown; the ones after it
    /// never ran.
    package func transactionInOneTrip(_ statements: [(sql: String, parameters: [String?])]) throws(PostgresError) -> [PostgresRows] {
        let all = [(sql: "BEGIN", parameters: [String?]())] + statements + [(sql: "COMMIT", parameters: [])]
        do {
            return Array(try pipeline(all).dropFirst().dropLast())
        } catch {
            if isUsable { _ = try? query("ROLLBACK") }
            throw error
        }
    }

    /// Sends every statement, then one sync, and reads the results in order. The first failure
    /// is thrown once the pipeline is drained (the server skips what follows it).
    private func pipeline(_ statements: [(sql: String, parameters: [String?])]) throws(PostgresError) -> [PostgresRows] {
        // Preparing is a round trip of its own, once per statement and connection: done first.
        let names = try statements.map { statement throws(PostgresError) in
            try preparedName(for: statement.sql, parameterCount: statement.parameters.count)
        }
        statementsInJob += statements.count
        guard PQenterPipelineMode(handle) == 1 else {
            throw PostgresError(isConnected ? .queryFailed : .connectionLost, Self.lastError(handle), query: "<pipeline>")
        }
        var failure: PostgresError?
        for (statement, name) in zip(statements, names) {
            let copies = statement.parameters.map { $0.map { strdup($0) } ?? nil }
            defer { copies.forEach { free($0) } }
            let sent = copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { buffer in
                if let name {
                    PQsendQueryPrepared(handle, name, Int32(copies.count), buffer.baseAddress, nil, nil, 0)
                } else {
                    PQsendQueryParams(handle, statement.sql, Int32(copies.count), nil, buffer.baseAddress, nil, nil, 0)
                }
            }
            if sent != 1 {
                failure = PostgresError(isConnected ? .queryFailed : .connectionLost, Self.lastError(handle), query: statement.sql)
                break
            }
        }
        if failure == nil && PQpipelineSync(handle) != 1 {
            failure = PostgresError(isConnected ? .queryFailed : .connectionLost, Self.lastError(handle), query: "<pipeline sync>")
        }
        guard failure == nil else {
            // Nothing reliable can be read back: the connection is dropped by its pool (it stays in
            // pipeline mode with results pending, so it is no longer usable).
            PQexitPipelineMode(handle)
            throw PostgresError(.connectionLost, failure.map { "pipeline not sent whole: \($0.message)" } ?? "pipeline failed", query: "<pipeline>")
        }
        var answers: [PostgresRows] = []
        for statement in statements {
            var answer: PostgresRows?
            while let result = PQgetResult(handle) {
                if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                    PQclear(result)
                    continue
                }
                do throws(PostgresError) {
                    answer = try collect(result, sql: statement.sql)
                } catch {
                    failure = failure ?? error
                }
            }
            answers.append(answer ?? PostgresRows(affected: 0))
        }
        // The sync's own result ends the pipeline.
        if let sync = PQgetResult(handle) {
            if PQresultStatus(sync) != PGRES_PIPELINE_SYNC, failure == nil {
                failure = PostgresError(.queryFailed, "unexpected result at the end of a pipeline", query: "<pipeline>")
            }
            PQclear(sync)
        } else if failure == nil {
            failure = PostgresError(isConnected ? .queryFailed : .connectionLost, Self.lastError(handle), query: "<pipeline>")
        }
        PQexitPipelineMode(handle)
        if let failure { throw failure }
        return answers
    }

    private func collect(_ result: OpaquePointer?, sql: String) throws(PostgresError) -> PostgresRows {
        guard let result else {
            throw PostgresError(
                isConnected ? .queryFailed : .connectionLost, Self.lastError(handle), query: sql)
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(affected: Int(String(cString: PQcmdTuples(result))) ?? 0)
        case PGRES_TUPLES_OK:
            let columnCount = Int(PQnfields(result))
            let rowCount = Int(PQntuples(result))
            let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
            var rows: [[String?]] = []
            rows.reserveCapacity(rowCount)
            for row in 0..<Int32(rowCount) {
                var values: [String?] = []
                values.reserveCapacity(columnCount)
                for column in 0..<Int32(columnCount) {
                    if PQgetisnull(result, row, column) == 1 {
                        values.append(nil)
                    } else {
                        // libpq knows each value's length: no strlen over it.
                        let bytes = UnsafeRawBufferPointer(start: PQgetvalue(result, row, column), count: Int(PQgetlength(result, row, column)))
                        values.append(String(decoding: bytes, as: UTF8.self))
                    }
                }
                rows.append(values)
            }
            return PostgresRows(columns: columns, rows: rows, affected: rowCount)
        default:
            let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
            let message = primary ?? Self.lastError(handle)
            let code: PostgresError.Code = isConnected ? .queryFailed : .connectionLost
            throw PostgresError(code, message, sqlState: sqlState, query: sql)
        }
    }

    private static func lastError(_ handle: OpaquePointer) -> String {
        guard let message = PQerrorMessage(handle) else { return "unknown libpq error" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension PostgresConnection {
    /// Sets `lock_timeout` for the rest of the current transaction: a lock held elsewhere longer
    /// than `timeout` fails the statement waiting for it (SQLSTATE 55P03) instead of queueing
    /// every later query behind it.
    package func setTransactionLockTimeout(_ timeout: Duration) throws(PostgresError) {
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        try query(sql: "SELECT set_config('lock_timeout', $1, true)", ["\(max(1, milliseconds))ms"])
    }

    /// Runs `body` with no `statement_timeout` on this session (a migration building an index on
    /// a big table, a test's bulk load), then puts the session's own back: the connection returns
    /// to a pool whose statements keep their limit.
    package func withoutStatementTimeout<T>(_ body: () throws -> T) throws -> T {
        // One statement reads the session's limit and lifts it: a loaded machine can take longer
        // than a short limit on any statement, so the fewer run under it the better.
        let timeout = try query("""
            SELECT current_setting('statement_timeout') AS previous, set_config('statement_timeout', '0', false)
            """).scalar ?? "0"
        defer { _ = try? query(sql: "SELECT set_config('statement_timeout', $1, false)", [timeout]) }
        return try body()
    }
}
