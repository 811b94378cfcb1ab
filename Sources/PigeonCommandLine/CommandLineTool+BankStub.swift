import Foundation
import PigeonServer
import PigeonBankStub
import PigeonCore

extension CommandLineTool {
    static let bankStubHelp = """
        pigeon bank-stub [--listen HOST:PORT] [--clients ID,ID…] [--authorized USER,USER…|*] [--code CODE]

        A reference bank proxy implementing the SBIOutbound service (the WSDL the gateway serves
        at /pigeon/services/SBIOutbound?wsdl), for local runs and integrators. --clients lists
        the bank client ids it knows (default: any); --authorized lists users whose
        subscriptions are authorized without an SMS code (* for everyone); other users get a
        code, written to this log instead of sent (--code fixes it, default random six digits).
        Every report (reportNotificationExpired, pushIsOpened, reportPassUpdateNotFetched) is
        logged. Admin on the same port: GET /stub/reports, GET /stub/codes (JSON lines),
        PUT /stub/mode {"mode": "normal|down|slow|garbage|dropAfterAction", "milliseconds": N}
        (dropAfterAction sends the SMS, then hangs up without answering), GET /stub/health.
        The service address is printed at start. Default listen: 127.0.0.1:8088. Stops on SIGTERM.
        """

    func bankStub(_ options: [String]) async -> Int32 {
        var listen = "127.0.0.1:8088"
        var configuration = BankStub.Configuration()
        var index = 0
        func list(_ text: String) -> Set<String> {
            Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }
        while index < options.count {
            let option = options[index]
            if option == "--help" || option == "-h" {
                print(Self.bankStubHelp)
                return 0
            }
            guard ["--listen", "--clients", "--authorized", "--code"].contains(option) else {
                printError("pigeon bank-stub: unknown option '\(option)'; run 'pigeon bank-stub --help'")
                return 2
            }
            guard index + 1 < options.count else {
                printError("pigeon bank-stub: \(option) needs a value")
                return 2
            }
            let value = options[index + 1]
            switch option {
            case "--listen": listen = value
            case "--clients": configuration.bankClients = list(value)
            case "--authorized": configuration.authorizedUsers = list(value)
            default: configuration.fixedCode = value
            }
            index += 2
        }
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
            printError("pigeon bank-stub: --listen must be host:port, got '\(listen)'")
            return 2
        }
        let signals = SignalWaiter(signals: [SIGTERM, SIGINT])
        let logger = Logger(label: "pigeon.bank-stub", level: .info, handler: StreamLogHandler())
        let stub: BankStub
        do {
            stub = try BankStub(configuration: configuration, host: String(listen[..<colon]), port: port, logger: logger)
        } catch {
            printError("pigeon bank-stub: \(error)")
            return 1
        }
        let address = "http://\(listen[..<colon]):\(stub.port)\(BankStub.servicePath)"
        FileHandle.standardOutput.write(Data("pigeon bank-stub: serving SBIOutbound; point a gateway here with:\nsbiOutboundWebServiceURL = \(address)\n".utf8))
        _ = await signals.wait()
        stub.stop()
        return 0
    }
}
