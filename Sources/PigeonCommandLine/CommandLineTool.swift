import Foundation
import PigeonConfiguration
import PigeonCore
import PigeonServer
import PigeonSimulator
import PigeonStore

/// The `pigeon` command line (CONTRACT §6). `run` returns the process exit status.
package struct CommandLineTool: Sendable {
    let arguments: [String]

    package init(arguments: [String]) {
        self.arguments = arguments
    }


    static let usage = """
        usage: pigeon <command> [options]

        commands:
          serve --config FILE         apply pending migrations, then serve until SIGTERM
          migrate --config FILE       apply pending migrations and exit
          check-config --config FILE [--connect]
                                      validate the configuration (and reach what it names) and exit
          simulate [--listen HOST:PORT] [--state DIR] [--rapid-reset-limit] [--wallet-ca FILE]
                                      local APNs, FCM, RuStore, Huawei Push Kit, Web Push and
                                      Wallet devices (HTTP/2, TLS) for runs without credentials
          bank-stub [--listen HOST:PORT] [--clients …] [--authorized …|*] [--code CODE]
                                      a reference bank proxy (SBIOutbound) for local runs
          outbox list|retry --config FILE [--id ID,… | --all]
                                      dead-lettered reports to the bank: list, send again
          hash-password               read a password on standard input, print its yescrypt hash
                                      (a consoleUsersFile line's middle field)
          health [URL] [--cacert FILE]
                                      exit 0 when URL (default http://127.0.0.1:8080/health)
                                      answers 200: the container's health check
          --version                   print the version

        Run 'pigeon <command> --help' for a command's options.
        """

    package func run() async -> Int32 {
        guard let command = arguments.first else {
            printError(Self.usage)
            return 2
        }
        let options = Array(arguments.dropFirst())
        switch command {
        case "--help", "-h", "help":
            print(Self.usage)
            return 0
        case "serve":
            return await withConfiguration(command, options, help: "pigeon serve --config FILE\n\nApplies pending migrations, then serves HTTP until SIGTERM or SIGINT; SIGHUP reloads what can be reloaded (see docs/operating.md).") { configuration, logger, path in
                await serve(configuration, path: path, logger: logger)
            }
        case "migrate":
            return await withConfiguration(command, options, help: "pigeon migrate --config FILE\n\nApplies pending SQL migrations (from migrationsPath, else the migrations folder found from the binary) and exits.") { configuration, logger, _ in
                await migrate(configuration, logger: logger)
            }
        case "check-config":
            // --connect: also reach what the configuration names (database, bank, push hosts).
            let connect = options.contains("--connect")
            let help = """
                pigeon check-config --config FILE [--connect]

                Validates every key and referenced file, prints a summary, exits 0 if valid. With
                --connect it also connects to the database (and says whether migrations are
                pending), fetches the bank proxy's WSDL and resolves every push service's host: a
                line each, OK or FAILED with the reason; any FAILED exits 1.
                """
            return await withConfiguration(command, options.filter { $0 != "--connect" }, help: help) { configuration, logger, _ in
                let bank = configuration.http.bank.map { ", bankListen \($0.host):\($0.port)" } ?? " (SOAP on listen too)"
                let apps: [String]
                do {
                    apps = try configuration.checkListenerCertificates() + configuration.checkPushApps() + configuration.checkPasses()
                        + Gateway.checkConsole(configuration)
                } catch {
                    printError("pigeon: \(error)")
                    return 1
                }
                // serve and migrate refuse to start without the migrations: so does the check.
                let (directory, migrations): (URL, [Migration])
                do {
                    (directory, migrations) = try Gateway.loadMigrations(configuration)
                } catch {
                    printError("pigeon: \(error) (serve and migrate would refuse to start)")
                    return 1
                }
                let newest = migrations.map(\.version).max() ?? 0
                print("configuration OK: listen \(configuration.http.host):\(configuration.http.port)\(bank), database \(configuration.database.url.map(DatabaseURLRedaction.redacted) ?? "(dbUrl not set)")")
                print("migrations: \(migrations.count) in \(directory.path), the newest \(newest)")
                apps.forEach { print($0) }
                configuration.exposureWarnings.forEach { print("warning: \($0.message) (\($0.address))") }
                guard connect else { return 0 }
                let lines = await ConnectionCheck.run(configuration, logger: logger)
                lines.forEach { print($0.description) }
                return lines.allSatisfy(\.ok) ? 0 : 1
            }
        case "--version", "version":
            print("pigeon \(BuildInfo.version) (commit \(BuildInfo.commit))")
            return 0
        case "outbox":
            return await outbox(options)
        case "simulate":
            return await simulate(options)
        case "bank-stub":
            return await bankStub(options)
        case "health":
            return await health(options)
        case "hash-password":
            return hashPassword(options)
        default:
            printError("pigeon: unknown command '\(command)'; run 'pigeon --help'")
            return 2
        }
    }

    static let simulateHelp = """
        pigeon simulate [--listen HOST:PORT] [--state DIR] [--rapid-reset-limit] [--wallet-ca FILE]

        Plays the push services over HTTP/2 and TLS, validating like Apple, Google, RuStore and
        Huawei do: APNs (/3/device/<token>: alert, liveactivity and widgets pushes; broadcast
        channels at /1/apps/<bundle>/channels and /4/broadcasts/apps/<bundle>), FCM HTTP v1
        (/v1/projects/<p>/messages:send, token or fid targets) and its OAuth endpoint (/token),
        RuStore (/rustore), Huawei Push Kit and its OAuth endpoint (/hms), and a Web Push service
        (/webpush) that decrypts what it receives. Credentials (CA, server certificate, client
        .p12, .p8 key, service-account JSON, VAPID key) are made in the state folder on first run
        (default ./.local/pigeon-simulator); the server.conf lines that point a gateway here are
        printed at start. Admin: GET /simulator/pushes (every accepted push in arrival order),
        PUT /simulator/faults, GET /simulator/health, POST /simulator/webpush/subscriptions,
        POST /simulator/devices/keys (a phone's key: confidential pushes are shown decrypted).
        Wallet devices: POST /simulator/wallet/devices registers a device's passes with a
        gateway's PassKit web service, and the device fetches when APNs gets a push on a pass
        type's topic for it; POST /simulator/wallet/refresh, GET /simulator/wallet/fetches.
        --wallet-ca FILE: the CA the simulated devices check an HTTPS gateway against.
        --rapid-reset-limit enforces nghttp2's stream-reset limit as Debian ships it.
        Default listen: 127.0.0.1:2197. Stops on SIGTERM.
        """

    private func simulate(_ options: [String]) async -> Int32 {
        var listen = "127.0.0.1:2197"
        var state = FileManager.default.currentDirectoryPath + "/.local/pigeon-simulator"
        var enforceLimit = false
        var walletCA: String?
        var index = 0
        while index < options.count {
            switch options[index] {
            case "--help", "-h":
                print(Self.simulateHelp)
                return 0
            case "--rapid-reset-limit":
                enforceLimit = true
                index += 1
            case "--listen", "--state", "--wallet-ca":
                guard index + 1 < options.count else {
                    printError("pigeon simulate: \(options[index]) needs a value")
                    return 2
                }
                switch options[index] {
                case "--listen": listen = options[index + 1]
                case "--state": state = options[index + 1]
                default: walletCA = options[index + 1]
                }
                index += 2
            default:
                printError("pigeon simulate: unknown option '\(options[index])'; run 'pigeon simulate --help'")
                return 2
            }
        }
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
            printError("pigeon simulate: --listen must be host:port, got '\(listen)'")
            return 2
        }
        let signals = SignalWaiter(signals: [SIGTERM, SIGINT])
        let simulator: Simulator
        do {
            simulator = try Simulator(folder: URL(fileURLWithPath: state), host: String(listen[..<colon]), port: port, enforceRapidResetLimit: enforceLimit,
                                  walletCAFile: walletCA)
        } catch {
            printError("pigeon simulate: \(error)")
            return 1
        }
        FileHandle.standardOutput.write(Data("pigeon simulate: listening on \(simulator.baseURL); point a gateway here with:\n\(simulator.configurationSnippet)\n".utf8))
        _ = await signals.wait()
        simulator.stop()
        return 0
    }

    func withConfiguration(
        _ command: String, _ options: [String], help: String,
        _ body: (GatewayConfiguration, Logger, _ path: String) async -> Int32
    ) async -> Int32 {
        var path: String?
        var index = 0
        while index < options.count {
            switch options[index] {
            case "--help", "-h":
                print(help)
                return 0
            case "--config":
                guard index + 1 < options.count else {
                    printError("pigeon \(command): --config needs a file")
                    return 2
                }
                path = options[index + 1]
                index += 2
            default:
                printError("pigeon \(command): unknown option '\(options[index])'; run 'pigeon \(command) --help'")
                return 2
            }
        }
        guard let path else {
            printError("pigeon \(command): --config FILE is required")
            return 2
        }
        let configuration: GatewayConfiguration
        do {
            configuration = try GatewayConfiguration.load(path: path)
        } catch {
            printError("pigeon \(command): \(error.description)")
            return 1
        }
        let logger = Logger(label: "pigeon", level: configuration.logLevel, handler: StreamLogHandler())
        return await body(configuration, logger, path)
    }

    private func serve(_ configuration: GatewayConfiguration, path: String, logger: Logger) async -> Int32 {
        let signals = SignalWaiter(signals: [SIGTERM, SIGINT, SIGHUP])
        FileDescriptorLimit.raise(for: configuration.http, logger: logger)
        let gateway: Gateway
        do {
            gateway = try await Gateway.start(configuration: configuration, logger: logger,
                                              build: Gateway.Build(version: BuildInfo.version, commit: BuildInfo.commit))
        } catch {
            logger.critical("cannot start: \(error)")
            return 1
        }
        var received = await signals.wait()
        // SIGHUP (systemctl reload): the HTTPS certificate files are read again and a changed
        // logLevel applies at once; other server.conf changes are named and wait for the next
        // start. Logs go to standard error (the journal): there is no file to reopen.
        while received == SIGHUP {
            logger.notice("SIGHUP received: reloading")
            gateway.reload(rereading: Result { () throws(ConfigurationError) in try GatewayConfiguration.load(path: path) })
            received = await signals.wait()
        }
        logger.notice("received signal \(received)")
        await gateway.shutdown()
        return 0
    }

    private func migrate(_ configuration: GatewayConfiguration, logger: Logger) async -> Int32 {
        do {
            let pool = try Gateway.openPool(configuration, logger: logger)
            defer { pool.close() }
            let migrator = try Gateway.loadMigrator(configuration)
            let report = try await migrator.migrate(pool, logger: logger)
            print("migrations: \(report.applied.count) applied, \(report.alreadyApplied) already applied")
            return 0
        } catch {
            printError("pigeon migrate: \(error)")
            return 1
        }
    }

    func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
