import Foundation
import PigeonBankStub
@testable import PigeonConfiguration
import PigeonCore
@testable import PigeonServer
import PigeonSimulator
import PigeonStore
import PigeonTestSupport
import PostgresDriver

/// A gateway with everything CONTRACT §2–§3 needs: its own database, `pigeon simulate` and
/// `pigeon bank-stub`, plus a device-API client (curl: URLSession stalls on 401 answers).
final class DeviceFlowHarness: Sendable {
    let simulator: SimulatorFixture
    let stub: BankStub
    let database: (pool: PostgresPool, url: String, drop: @Sendable () async -> Void)
    let gateway: GatewayHarness

    /// `clockStoppedAt`, when given, is the gateway's time for its per-address limits and console
    /// sessions, standing still.
    init(stub configuration: BankStub.Configuration = .init(bankClients: ["bank"], authorizedUsers: ["alice", "bob"]),
         clockStoppedAt: Date? = nil,
         _ adjust: @escaping @Sendable (inout GatewayConfiguration) -> Void = { _ in }) async throws {
        simulator = try await SimulatorFixture.start()
        stub = try BankStub(configuration: configuration, port: 0, logger: .silent)
        database = try await TestDatabase.isolatedDatabaseWithURL()
        let (simulatorInstance, databaseURL, stubURL) = (simulator.simulator, database.url, stub.serviceURL)
        var clock: (@Sendable () -> Date)?
        if let clockStoppedAt { clock = { clockStoppedAt } }
        gateway = try await GatewayHarness(clock: clock) {
            $0.point(at: simulatorInstance, database: databaseURL)
            $0.bankProxyURL = stubURL
            // Far above a loaded machine's answer time (the stub answers on the test process's
            // threads); a test of a slow bank sets its own.
            $0.bankProxyTimeoutSeconds = 10
            adjust(&$0)
        }
    }

    func stop() async {
        await gateway.gateway.shutdown()
        stub.stop()
        simulator.stop()
        await database.drop()
    }

    /// A device-API answer: status and parsed JSON body.
    struct Answer: Sendable {
        var status: Int
        var body: String
        /// Response headers by lower-cased name (only from ``callWithHeaders``).
        var headers: [String: String] = [:]
        /// The body's bytes (only from the Wallet harness's calls).
        var bytes = Data()
        var json: [String: String] {
            ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any])?.compactMapValues { $0 as? String } ?? [:]
        }
    }

    func call(_ method: String, _ path: String, body: String? = nil, bearer: String? = nil) async throws -> Answer {
        try await Self.call(gateway.baseURL, method, path, body: body, bearer: bearer)
    }

    /// A device-API call that also returns the response headers.
    func callWithHeaders(_ method: String, _ path: String, body: String? = nil) async throws -> Answer {
        var arguments = ["-s", "-S", "-i", "-X", method, "--max-time", "120", "-H", "Content-Type: application/json"]
        if body != nil { arguments += ["--data-binary", "@-"] }
        arguments.append(gateway.baseURL + path)
        return try await Self.curlWithHeaders(arguments, input: body.map { Data($0.utf8) })
    }

    /// Runs curl with `-i` among `arguments` and splits its output into status, headers and body
    /// (bytes kept as they came: a pass is binary).
    static func curlWithHeaders(_ arguments: [String], input: Data?) async throws -> Answer {
        let output = try await ChildProcess.run("/usr/bin/curl", arguments, input: input)
        let separator = Data("\r\n\r\n".utf8)
        var head = output, rest = Data()
        // The last header block ends the headers (a 100 Continue may precede).
        var searchStart = output.startIndex
        while let range = output.range(of: separator, in: searchStart..<output.endIndex) {
            head = output[output.startIndex..<range.lowerBound]
            rest = output[range.upperBound...]
            searchStart = range.upperBound
            if !output[range.upperBound...].starts(with: Data("HTTP/".utf8)) { break }
        }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines.last { $0.hasPrefix("HTTP/") } ?? ""
        var headers: [String: String] = [:]
        for line in lines where line.contains(":") && !line.hasPrefix("HTTP/") {
            let parts = line.split(separator: ":", maxSplits: 1)
            headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
        return Answer(status: status, body: String(decoding: rest, as: UTF8.self), headers: headers, bytes: Data(rest))
    }

    /// A device-API call to any gateway. (Its bound, as `callWithHeaders`'s, is far beyond a slow
    /// bank's answer the gateway waits out, twice the harness's 10 s, on a loaded machine.)
    static func call(_ baseURL: String, _ method: String, _ path: String, body: String? = nil, bearer: String? = nil) async throws -> Answer {
        var arguments = ["-s", "-S", "-o", "-", "-w", "\n%{http_code}", "-X", method, "--max-time", "120",
                         "-H", "Content-Type: application/json"]
        if let bearer { arguments += ["-H", "Authorization: Bearer \(bearer)"] }
        if body != nil { arguments += ["--data-binary", "@-"] }
        arguments.append(baseURL + path)
        let output = String(decoding: try await ChildProcess.run("/usr/bin/curl", arguments, input: body.map { Data($0.utf8) }), as: UTF8.self)
        let split = output.lastIndex(of: "\n") ?? output.startIndex
        return Answer(status: Int(output[output.index(after: split)...]) ?? 0, body: String(output[..<split]))
    }

    static func registration(user: String, device: String = "phone-1", platform: String = "IOS", token: String? = nil, bank: String = "bank") -> String {
        let pushToken = token ?? (platform == "IOS" ? String(repeating: "ab", count: 32) : "fcm-" + String(repeating: "x", count: 150))
        return #"{"bankClientId":"\#(bank)","userId":"\#(user)","deviceId":"\#(device)","platform":"\#(platform)","pushToken":"\#(pushToken)"}"#
    }

    /// A verification body.
    static func verification(user: String, device: String, registrationId: String, code: String, bank: String = "bank") -> String {
        #"{"bankClientId":"\#(bank)","userId":"\#(user)","deviceId":"\#(device)","registrationId":"\#(registrationId)","verificationCode":"\#(code)"}"#
    }

    /// Registers an authorized user's device (or, with `bearer`, refreshes a known one's push
    /// token) and returns its authentication token.
    func register(user: String, device: String = "phone-1", platform: String = "IOS", token: String? = nil, bearer: String? = nil) async throws -> String {
        let answer = try await call("POST", "/api/v1/devices/register", body: Self.registration(user: user, device: device, platform: platform, token: token), bearer: bearer)
        guard answer.status == 200, let token = answer.json["authenticationToken"] else {
            throw RegistrationFailed(description: "registration failed: \(answer.status) \(answer.body)")
        }
        return token
    }

    struct RegistrationFailed: Error, CustomStringConvertible {
        var description: String
    }

    func count(_ sql: String) async throws -> Int {
        try await database.pool.withConnection { try $0.query(sql: sql).scalar.flatMap(Int.init) ?? -1 }
    }

    /// Waits until nothing more can reach the bank: every notification past its expiry has been
    /// handled (its report written in the same transaction) and the outbox has sent every report
    /// (a row goes once the bank answered). A report the bank stub has not seen by then never
    /// comes: what a test counts afterwards is final, without waiting for time to pass.
    func waitUntilReportsSettled(seconds: Int = 60) async throws -> Bool {
        try await waitUntil(seconds: seconds) {
            try await count("""
                SELECT (SELECT count(*) FROM outbox)
                     + (SELECT count(*) FROM notifications WHERE expires_at <= now() AND NOT expiry_handled)
                """) == 0
        }
    }

    /// Polls `condition` every 50 ms; true once it holds, false after `seconds`.
    func waitUntil(seconds: Int, _ condition: () async throws -> Bool) async throws -> Bool {
        try await Self.waitUntil(seconds: seconds, condition)
    }

    /// Polls `condition` every 50 ms; true once it holds, false after `seconds`.
    static func waitUntil(seconds: Int, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
