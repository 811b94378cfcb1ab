import Foundation
import OutboundHTTP

extension CommandLineTool {
    static let healthHelp = """
        pigeon health [URL] [--cacert FILE]

        Asks URL (default http://127.0.0.1:8080/health) and exits 0 when it answers 200 within
        3 seconds, 1 otherwise, saying why: the container's health check, with no curl in the
        image. For a listener serving HTTPS with a private CA, give the CA with --cacert.
        """

    func health(_ options: [String]) async -> Int32 {
        var url = "http://127.0.0.1:8080/health"
        var caFile: String?
        var index = 0
        while index < options.count {
            switch options[index] {
            case "--help", "-h":
                print(Self.healthHelp)
                return 0
            case "--cacert" where index + 1 < options.count:
                caFile = options[index + 1]
                index += 1
            case let option where !option.hasPrefix("-"):
                url = option
            default:
                printError("pigeon health: unknown option '\(options[index])'\n\n\(Self.healthHelp)")
                return 2
            }
            index += 1
        }
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            printError("pigeon health: '\(url)' is not an http(s) URL")
            return 2
        }
        do {
            let client = try HTTP2Client(configuration: .init(maxConnections: 1, timeout: .seconds(3), caFile: caFile, threadName: "pigeon-health"))
            defer { client.shutdown() }
            let response = try await client.send(url: url, method: "GET", headers: [:], body: Data())
            guard response.status == 200 else {
                printError("pigeon health: \(url) answered \(response.status)")
                return 1
            }
            return 0
        } catch {
            printError("pigeon health: \(url): \(error)")
            return 1
        }
    }
}
