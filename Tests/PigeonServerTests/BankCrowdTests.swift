import Foundation
@testable import PigeonConfiguration
import PigeonCrypto
import PigeonHTTP
@testable import PigeonServer
import PigeonSimulator
import PigeonTestSupport
import Testing

/// The bank keeps its connections on `bankListen` under a crowd from a few addresses (issue 45):
/// connections count as the bank's only once they authenticate, a full cap of unauthenticated
/// ones makes room by cutting the crowd's own, and `bankAllowedClients` refuses everyone else
/// before anything is counted. Each attack comes from several loopback addresses (127.0.0.x).
@Suite("The bank under a crowd", .enabled(if: TestDatabase.isAvailable, "needs PIGEON_TEST_DATABASE_URL"),
       .enabled(if: TestTier.runsSystem, "system tier (crowds of hundreds of connections, run as a group of their own): PIGEON_TEST_TIER"))
struct BankCrowdTests {
    /// Keeps PER connections open from each of ADDRESSES to 127.0.0.1:PORT for SECONDS, opening
    /// new ones as the server cuts them. MODE `silent` sends nothing (not even a TLS hello);
    /// `head` sends one well-formed request without credentials and keeps the connection. With
    /// HOLD (a file's path): once HOLD exists it opens no more, keeps what the server left it, and
    /// ends when HOLD.end exists. Prints JSON: connections opened, and seen cut.
    static let crowd = #"""
        import json, os, socket, sys, time
        port, mode, addresses, per_address, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), float(sys.argv[5])
        hold = sys.argv[6] if len(sys.argv) > 6 else None
        request = b"GET /health HTTP/1.1\r\nHost: bank\r\n\r\n"
        held = {address: [] for address in addresses}
        opened = cut = 0
        deadline, rounds = time.time() + seconds, 0
        while time.time() < deadline and not (hold and os.path.exists(hold + ".end")):
            holding = hold is not None and os.path.exists(hold)
            rounds += 1
            for address in addresses:
                alive = []
                for s in held[address]:
                    try:
                        if s.recv(65536) == b"":
                            cut += 1; s.close(); continue
                    except BlockingIOError:
                        pass
                    except OSError:
                        cut += 1; s.close(); continue
                    alive.append(s)
                held[address] = alive
                # Topped up every half second (not in a tight loop: the server refuses past its caps).
                while not holding and rounds % 5 == 1 and len(held[address]) < per_address and time.time() < deadline:
                    s = socket.socket()
                    s.settimeout(1)
                    try:
                        s.bind((address, 0))
                        s.connect(("127.0.0.1", port))
                        if mode == "head":
                            s.sendall(request)
                        s.setblocking(False)
                        held[address].append(s)
                        opened += 1
                    except OSError:
                        s.close()
                        break
            time.sleep(0.1)
        print(json.dumps({"opened": opened, "cut": cut}), flush=True)
        """#

    /// A call's HTTP status (0 when curl got no answer) and curl's own account of it: its exit
    /// code and error, which tell a connection refused at accept from one cut later. Its time
    /// bound is generous: a full run shares two cores with the crowd and six hundred other tests,
    /// and a call the listener refuses or cuts fails at once whatever the bound (seen once with
    /// 20 s under a full run).
    func curl(_ arguments: [String]) async throws -> (status: Int, curl: String) {
        let output = String(decoding: try await ChildProcess.run(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} exit %{exitcode}: %{errormsg}", "--max-time", "90"] + arguments,
            allowFailure: true), as: UTF8.self)
        let status = output.prefix { $0 != " " }
        return (Int(status) ?? 0, String(output.dropFirst(status.count + 1)))
    }

    /// The bank listener's connection counters in METRICS (its `/metrics`), for a failure's message.
    func listenerCounters(_ metrics: String) -> String {
        metrics.split(separator: "\n").filter { $0.hasPrefix("pigeon_http_") && $0.contains("listener=\"bank\"") && !$0.contains("_bucket") }
            .joined(separator: "; ")
    }

    /// The value of a listener gauge on `/metrics`.
    func gauge(_ name: String, _ metrics: String) -> Double? {
        metrics.split(separator: "\n").first { $0.hasPrefix("\(name){listener=\"bank\"}") }
            .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
    }

    @Test("client certificates required: silent connections from 8 addresses fill the cap of unauthenticated connections; the bank's new connections still get in (the crowd's oldest are cut to make room)")
    func silentCrowdWithClientCertificates() async throws {
        let simulator = try await SimulatorFixture.start()
        defer { simulator.stop() }
        let credentials = simulator.simulator.credentials
        let harness = try await EdgeTests.splitGateway {
            $0.http.bankTlsCertificatePath = credentials.serverCertificate
            $0.http.bankTlsKeyPath = credentials.serverKey
            $0.http.bankClientCaFile = credentials.caFile
            $0.http.bankConnectionLimit = 200
        }
        let addresses = (2...9).map { "127.0.0.\($0)" }.joined(separator: ",")
        // 8 × 16 = 128 silent connections against a cap of 100, topped up for 25 s.
        async let attack = ChildProcess.run("/usr/bin/python3", ["-c", Self.crowd, String(harness.gateway.bankPort), "silent", addresses, "16", "25"])
        try await waitForCap(harness, credentials: credentials)
        let wsdl = harness.bankBaseURL + GatewayHarness.soapPath + "?wsdl"
        for call in 0..<10 {
            let answer = try await curl(["--cacert", credentials.caFile, "--cert", credentials.clientCertificate, "--key", credentials.clientKey, wsdl])
            if answer.status != 200 {
                Issue.record("the bank's call \(call) during the crowd: \(answer); \(listenerCounters((try? await metricsText(harness, credentials: credentials)) ?? ""))")
            }
        }
        let report = String(decoding: try await attack, as: UTF8.self)
        let metrics = try await metricsText(harness, credentials: credentials)
        #expect((gauge("pigeon_http_unauthenticated_evictions", metrics) ?? 0) > 0, "the crowd's connections were cut to make room: \(report)")
    }

    @Test("Basic credentials, no client certificates: 2 addresses × 105 keep-alive connections with well-formed heads stay unauthenticated and capped; every SOAP call of the bank is answered")
    func keepAliveCrowdWithBasicCredentials() async throws {
        let harness = try await EdgeTests.splitGateway {
            $0.http.bankAddress = ("0.0.0.0", 0)
            $0.http.soapUsername = "bank"
            $0.http.soapPassword = "s3cret-bank-password"
            $0.http.bankConnectionLimit = 200
            // No crowd connection is cut for idling or waiting while the test runs: only the cap
            // cuts them (after 30 s idle, the default, every one would be gone, capped or not).
            $0.http.idleTimeoutSeconds = 3600
            $0.http.requestDeadlineSeconds = 3600
        }
        // The crowd tops up until `hold` exists, then keeps what the listener left it until
        // `hold.end` (at most 300 s).
        let hold = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-crowd-\(UUID().uuidString)").path
        defer { for path in [hold, hold + ".end"] { try? FileManager.default.removeItem(atPath: path) } }
        async let attack = ChildProcess.run("/usr/bin/python3", ["-c", Self.crowd, String(harness.gateway.bankPort), "head", "127.0.0.2,127.0.0.3", "105", "300", hold])
        // The crowd is in place once its addresses hold their share (16 each) and lost some to
        // make room for more of their own.
        let crowded = try await EdgeTests.waitUntil(seconds: 60) {
            let metrics = (try? await harness.request("GET", "/metrics").text) ?? ""
            return (gauge("pigeon_http_unauthenticated_evictions", metrics) ?? 0) + (gauge("pigeon_http_unauthenticated_refusals", metrics) ?? 0) > 0
        }
        #expect(crowded, "the crowd never filled its share")
        let body = GatewayHarness.envelope("<inb:getDeliveryStatus><id>x</id></inb:getDeliveryStatus>")
        for call in 0..<10 {
            let answer = try await curl(["-u", "bank:s3cret-bank-password", "-H", "Content-Type: text/xml", "--data-binary", body,
                                         harness.bankBaseURL + GatewayHarness.soapPath])
            if answer.status != 200 {
                Issue.record("the bank's call \(call) during the crowd: \(answer); \(listenerCounters((try? await harness.request("GET", "/metrics").text) ?? "")); the listener said: \(harness.logs.records.filter { $0.message.contains("limit") || $0.message.contains("onnection") }.suffix(5).map(\.message))")
            }
        }
        // The crowd stops topping up but keeps its connections: once the listener has dealt with
        // the last newcomers (a newcomer cuts one of its own once the address holds 16 that spoke;
        // the cut ones may not be closed yet, so open connections are not the measure), each
        // address is left its 16. Before, this was looked for between the crowd's bursts within
        // 10 s: the project's CI found a loaded listener still taking one burst when the next came.
        FileManager.default.createFile(atPath: hold, contents: Data())
        let capped = try await EdgeTests.waitUntil(seconds: 60) {
            let metrics = (try? await harness.request("GET", "/metrics").text) ?? ""
            return (gauge("pigeon_http_unauthenticated_connections", metrics) ?? .infinity) <= 2 * 16 + 2 // and the test's own
        }
        let counters = listenerCounters((try? await harness.request("GET", "/metrics").text) ?? "")
        #expect(capped, "each crowd address held at most its 16 unauthenticated connections: \(counters)")
        FileManager.default.createFile(atPath: hold + ".end", contents: Data())
        _ = try await attack
    }

    /// Sends CALLS SOAP calls from 127.0.0.1 to PORT and PATH at once over WORKERS threads, each on a new
    /// connection: RIGHT of them with the bank's credentials, the rest with a wrong password,
    /// interleaved; over HTTPS when a CA file follows. Prints JSON: the right calls' statuses (0: no answer), and the wrong ones' counts.
    static let signInFlood = #"""
        import base64, http.client, json, random, ssl, sys
        from concurrent.futures import ThreadPoolExecutor
        port, path, calls, right, workers = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        user, password, body = sys.argv[6], sys.argv[7], sys.argv[8].encode()
        tls = ssl.create_default_context(cafile=sys.argv[9]) if len(sys.argv) > 9 else None
        kinds = ["right"] * right + ["wrong"] * (calls - right)
        random.Random(7).shuffle(kinds)
        def call(kind):
            secret = password if kind == "right" else "not-" + password
            headers = {"Content-Type": "text/xml", "Authorization": "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()}
            connection = (http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=tls) if tls
                          else http.client.HTTPConnection("127.0.0.1", port, timeout=30))
            try:
                connection.request("POST", path, body, headers)
                return kind, connection.getresponse().status
            except OSError:
                return kind, 0
            finally:
                connection.close()
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(call, kinds))
        wrong = {}
        for kind, status in results:
            if kind == "wrong": wrong[str(status)] = wrong.get(str(status), 0) + 1
        print(json.dumps({"right": [status for kind, status in results if kind == "right"], "wrong": wrong}), flush=True)
        """#

    @Test("a wrong password from the bank's own address (a stale instance, a neighbour behind its NAT): 200 wrong calls and 40 right ones at once over 64 connections, plain and over TLS; every right one is answered, the guessers' connections are the ones cut",
          arguments: [false, true])
    func wrongPasswordsFromTheBanksAddress(tls: Bool) async throws {
        let simulator = try await SimulatorFixture.start()
        defer { simulator.stop() }
        let credentials = simulator.simulator.credentials
        let harness = try await EdgeTests.splitGateway {
            $0.http.soapUsername = "bank"
            $0.http.soapPassword = "s3cret-bank-password"
            if tls {
                $0.http.bankTlsCertificatePath = credentials.serverCertificate
                $0.http.bankTlsKeyPath = credentials.serverKey
            }
        }
        let body = GatewayHarness.envelope("<inb:getDeliveryStatus><id>x</id></inb:getDeliveryStatus>")
        for round in 0..<2 {
            let output = String(decoding: try await ChildProcess.run("/usr/bin/python3", [
                "-c", Self.signInFlood, String(harness.gateway.bankPort), GatewayHarness.soapPath, "240", "40", "64", "bank", "s3cret-bank-password", body]
                + (tls ? [credentials.caFile] : [])), as: UTF8.self)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
            let right = try #require(report["right"] as? [Int])
            if !(right.count == 40 && right.allSatisfy { $0 == 200 }) {
                // Which of the listener's cuts took the bank's call: say so in the failure.
                Issue.record("round \(round): the bank's calls: \(output); \(listenerCounters((try? await metricsText(harness, credentials: credentials)) ?? ""))")
            }
            let wrong = try #require(report["wrong"] as? [String: Int])
            #expect(wrong["200"] == nil, "round \(round): no wrong password passed: \(output)")
        }
        let metrics = try await metricsText(harness, credentials: credentials)
        let limited = metrics.split(separator: "\n").first { $0.hasPrefix("pigeon_soap_sign_in_failures_total{reason=\"limited\"}") }
        #expect(limited.flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }.map { $0 > 0 } == true,
                "the guesses past the limit were answered 429: \(limited ?? "no line")")
    }

    /// Sends CALLS GETs of PATH with Basic USER:PASSWORD to 127.0.0.1:PORT over WORKERS threads,
    /// each on a new connection. Prints JSON: the count of each status (0: no answer).
    static let concurrentGets = #"""
        import base64, http.client, json, sys
        from concurrent.futures import ThreadPoolExecutor
        port, path, calls, workers, user, password = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
        headers = {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
        def call(_):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            try:
                connection.request("GET", path, headers=headers)
                return connection.getresponse().status
            except OSError:
                return 0
            finally:
                connection.close()
        with ThreadPoolExecutor(workers) as pool:
            statuses = list(pool.map(call, range(calls)))
        print(json.dumps({str(s): statuses.count(s) for s in set(statuses)}), flush=True)
        """#

    @Test("an operator's tool calling the console's JSON API 64 at once from one address: every call answered (a request being handled is never cut to make room; before, calls past the 16th lost their connection)")
    func consoleCallsAtOnce() async throws {
        let users = FileManager.default.temporaryDirectory.appendingPathComponent("pigeon-operators-\(UUID().uuidString)").path
        // yescrypt at its default cost: each check takes long enough for the calls to overlap.
        let hash = try #require(PasswordHash.make("tool-password-2026"))
        FileManager.default.createFile(atPath: users, contents: Data("tool:\(hash):viewer\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: users) }
        let harness = try await EdgeTests.splitGateway {
            $0.console.usersFile = users
        }
        let output = String(decoding: try await ChildProcess.run("/usr/bin/python3", [
            "-c", Self.concurrentGets, String(harness.gateway.bankPort), "/console/api/v1/audit", "128", "64", "tool", "tool-password-2026"]), as: UTF8.self)
        let statuses = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Int], "\(output)")
        let metrics = try await harness.request("GET", "/metrics").text.split(separator: "\n").filter { $0.contains("unauthenticated") || $0.contains("deadline") }
        #expect(statuses == ["200": 128], "\(output) \(metrics)")
    }

    @Test("bankAllowedClients: a connection from another address is refused at accept; the bank's address is served")
    func allowedClients() async throws {
        let harness = try await EdgeTests.splitGateway {
            $0.http.bankAddress = ("0.0.0.0", 0)
            $0.http.soapAuthenticationDisabled = true
            $0.http.bankAllowedClients = [try! IPNetwork("127.0.0.1/32"), try! IPNetwork("2001:db8::/32")]
        }
        let ready = harness.bankBaseURL + "/ready"
        #expect(try await curl([ready]).status == 200)
        #expect(try await curl(["--interface", "127.0.0.2", ready]).status == 0)
        let metrics = try await harness.request("GET", "/metrics").text
        #expect((gauge("pigeon_http_allowlist_refusals", metrics) ?? 0) >= 1)
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration.parse(text: "bankAllowedClients = 10.0.0.0/8\n", name: "t")
        }
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration.parse(text: "bankListen = 127.0.0.1:8081\nbankAllowedClients = 10.0.0.1/8\n", name: "t")
        }
        let parsed = try GatewayConfiguration.parse(text: "bankListen = 127.0.0.1:8081\nbankAllowedClients = 10.0.0.0/8, 192.0.2.7 ,2001:db8::/48\n", name: "t")
        #expect(parsed.http.bankAllowedClients.map(\.description) == ["10.0.0.0/8", "192.0.2.7/32", "2001:db8::/48"])
    }

    /// Waits until the unauthenticated connections are at their cap (the gateway has cut some to
    /// make room, or refused some), reading the metrics as the bank does.
    private func waitForCap(_ harness: GatewayHarness, credentials: SimulatorCredentials) async throws {
        let full = try await EdgeTests.waitUntil(seconds: 60) {
            let metrics = (try? await metricsText(harness, credentials: credentials)) ?? ""
            return (gauge("pigeon_http_unauthenticated_evictions", metrics) ?? 0) + (gauge("pigeon_http_unauthenticated_refusals", metrics) ?? 0) > 0
        }
        #expect(full, "the crowd never filled the cap")
    }

    /// The bank listener's `/metrics`, over HTTPS when it serves TLS (with the client certificate
    /// where one is required).
    private func metricsText(_ harness: GatewayHarness, credentials: SimulatorCredentials) async throws -> String {
        String(decoding: try await ChildProcess.run("/usr/bin/curl", [
            "-s", "--max-time", "20", "--cacert", credentials.caFile, "--cert", credentials.clientCertificate, "--key", credentials.clientKey,
            harness.bankBaseURL + "/metrics"], allowFailure: true), as: UTF8.self)
    }
}
