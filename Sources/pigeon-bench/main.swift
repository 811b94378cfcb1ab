import Foundation
import PushCore
import PushTransport

// pigeon-bench ingest --port P --clients N --recipients R --seconds S [--rate RPS] [--run-id ID]
// Prints one line: clients recipients requests/s p50_ms p99_ms errors.
var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
if arguments.first == "apns-token", arguments.count == 4 {
    // pigeon-bench apns-token KEY.p8 KEY_ID TEAM_ID: a provider token for h2load's ceiling run.
    let values = Array(arguments)
    do {
        let credentials = try APNsSigningCredentials(p8PEM: try String(contentsOfFile: values[1], encoding: .utf8), keyId: values[2], teamId: values[3])
        print(try credentials.providerToken(issuedAt: Date()))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("pigeon-bench: \(error)\n".utf8))
        exit(1)
    }
}
if let command = arguments.first, ["webpush-encrypt", "vapid", "webpush-cost", "confidential-cost"].contains(command) {
    // pigeon-bench webpush-encrypt P256DH AUTH TEXT: the body the gateway would send (base64url).
    // pigeon-bench vapid KEY.pem AUDIENCE SUBJECT: the Authorization header for AUDIENCE.
    // pigeon-bench webpush-cost N: µs per encrypted message, and per P-256 keygen + ECDH alone.
    let values = Array(arguments)
    do {
        switch (command, values.count) {
        case ("webpush-encrypt", 4): print(try WebPushCheck.encrypt(p256dh: values[1], auth: values[2], plaintext: values[3]))
        case ("vapid", 4): print(try WebPushCheck.vapid(keyPath: values[1], audience: values[2], subject: values[3]))
        case ("confidential-cost", 2):
            // pigeon-bench confidential-cost N: µs per confidential push's sealing, and per step.
            for (step, micros) in try WebPushCheck.confidentialCost(count: Int(values[1]) ?? 10_000).sorted(by: { $0.key < $1.key }) {
                print(String(format: "%@ %.1f", step, micros))
            }
        case ("webpush-cost", 2):
            let cost = try WebPushCheck.cost(count: Int(values[1]) ?? 10_000)
            print(String(format: "%.1f %.1f", cost.message, cost.keyAgreement))
        default:
            FileHandle.standardError.write(Data("pigeon-bench: usage: webpush-encrypt P256DH AUTH TEXT | vapid KEY.pem AUDIENCE SUBJECT | webpush-cost N | confidential-cost N\n".utf8))
            exit(2)
        }
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("pigeon-bench: \(error)\n".utf8))
        exit(1)
    }
}
if arguments.first == "passes", arguments.count >= 2 {
    // pigeon-bench passes update|fetch|fetch304 --port P --clients C --count N [--pass FILE]
    // (FILE: a .pkpass in base64). Prints: requests seconds per_second errors.
    let phase = arguments[arguments.index(after: arguments.startIndex)]
    arguments = arguments.dropFirst(2)
    while let key = arguments.first, key.hasPrefix("--"), arguments.count >= 2 {
        options[String(key.dropFirst(2))] = arguments[arguments.index(after: arguments.startIndex)]
        arguments = arguments.dropFirst(2)
    }
    let bench = PassBenchmark(host: "127.0.0.1", port: UInt16(options["port"] ?? "") ?? 8080, clients: Int(options["clients"] ?? "") ?? 16,
                              count: Int(options["count"] ?? "") ?? 1000)
    do {
        let result: IngestBenchmark.Result
        switch phase {
        case "update":
            result = try bench.update(passBase64: try String(contentsOfFile: options["pass"] ?? "", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines))
        case "fetch":
            result = try bench.fetch(ifModifiedSince: nil)
        case "fetch304":
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            result = try bench.fetch(ifModifiedSince: formatter.string(from: Date().addingTimeInterval(3600)))
        default:
            FileHandle.standardError.write(Data("pigeon-bench: passes update|fetch|fetch304\n".utf8))
            exit(2)
        }
        print(String(format: "%d %.2f %.0f %d", result.requests, result.elapsed, result.throughput, result.errors))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("pigeon-bench: \(error)\n".utf8))
        exit(1)
    }
}
if arguments.first == "claim" {
    // pigeon-bench claim --db URL --batch N --rounds R: prints median_ms p99_ms claimed.
    arguments = arguments.dropFirst()
    while let key = arguments.first, key.hasPrefix("--"), arguments.count >= 2 {
        options[String(key.dropFirst(2))] = arguments[arguments.index(after: arguments.startIndex)]
        arguments = arguments.dropFirst(2)
    }
    do {
        let result = try await ClaimBenchmark.run(url: options["db"] ?? "", batch: Int(options["batch"] ?? "500") ?? 500,
                                                  rounds: Int(options["rounds"] ?? "20") ?? 20)
        print(String(format: "%.2f %.2f %d", result.median * 1000, result.p99 * 1000, result.claimed))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("pigeon-bench: \(error)\n".utf8))
        exit(1)
    }
}
if arguments.first == "decode-big", arguments.count == 2 {
    // pigeon-bench decode-big N: peak memory of decoding a send of N recipients and encoding its answer.
    do {
        try BigDecodeCheck.run(recipients: Int(arguments.last ?? "") ?? 1_000_000)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("pigeon-bench: \(error)\n".utf8))
        exit(1)
    }
}
if arguments.first == "decode-rss" {
    DecodeMemoryCheck.run(rounds: 5, perRound: 50_000)
    exit(0)
}
if arguments.first == "register" {
    // pigeon-bench register --port P --clients N --seconds S: prints registrations/s p50_ms p99_ms errors.
    arguments = arguments.dropFirst()
    while let key = arguments.first, key.hasPrefix("--"), arguments.count >= 2 {
        options[String(key.dropFirst(2))] = arguments[arguments.index(after: arguments.startIndex)]
        arguments = arguments.dropFirst(2)
    }
    let benchmark = RegisterBenchmark(
        host: options["host"] ?? "127.0.0.1", port: UInt16(options["port"] ?? "8080") ?? 8080,
        clients: Int(options["clients"] ?? "16") ?? 16, seconds: Double(options["seconds"] ?? "10") ?? 10,
        runId: options["run-id"] ?? UUID().uuidString.prefix(8).lowercased())
    do {
        let result = try benchmark.run()
        print(String(format: "%.0f %.2f %.2f %d", result.throughput, result.percentile(0.5) * 1000, result.percentile(0.99) * 1000, result.errors))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("pigeon-bench: \(error)\n".utf8))
        exit(1)
    }
}
if let command = arguments.first, ["hold", "slowloris", "acks", "status"].contains(command) {
    // pigeon-bench hold --port P --connections N --sources A,B… --seconds S: prints "held reopened".
    // pigeon-bench slowloris --port P --connections N --source A --seconds S: prints connections closed by the server.
    // pigeon-bench acks --port P --tokens FILE --notification ID --seconds S [--sources A,B…]: prints acks/s p50_ms p99_ms errors.
    arguments = arguments.dropFirst()
    while let key = arguments.first, key.hasPrefix("--"), arguments.count >= 2 {
        options[String(key.dropFirst(2))] = arguments[arguments.index(after: arguments.startIndex)]
        arguments = arguments.dropFirst(2)
    }
    let host = options["host"] ?? "127.0.0.1"
    let port = UInt16(options["port"] ?? "8080") ?? 8080
    let seconds = Double(options["seconds"] ?? "10") ?? 10
    do {
        switch command {
        case "hold":
            let sources = (options["sources"] ?? "127.0.0.1").split(separator: ",").map(String.init)
            let result = try EdgeLoad.hold(host: host, port: port, connections: Int(options["connections"] ?? "1000") ?? 1000, sources: sources, seconds: seconds)
            print("\(result.held) \(result.reopened)")
        case "status":
            // pigeon-bench status --port P --clients N --ids FILE --seconds S: prints requests/s p50_ms p99_ms errors.
            let ids = try String(contentsOfFile: options["ids"] ?? "", encoding: .utf8).split(separator: "\n").map(String.init)
            let result = try StatusBenchmark.run(host: host, port: port, clients: Int(options["clients"] ?? "16") ?? 16, seconds: seconds, ids: ids)
            print(String(format: "%.0f %.2f %.2f %d", result.throughput, result.percentile(0.5) * 1000, result.percentile(0.99) * 1000, result.errors))
        case "slowloris":
            print(EdgeLoad.slowloris(host: host, port: port, connections: Int(options["connections"] ?? "256") ?? 256, source: options["source"] ?? "127.0.0.1", seconds: seconds))
        default:
            let tokens = try String(contentsOfFile: options["tokens"] ?? "", encoding: .utf8).split(separator: "\n").map(String.init)
            let sources = (options["sources"] ?? "").split(separator: ",").map(String.init)
            let result = try EdgeLoad.acknowledgements(host: host, port: port, tokens: tokens, notification: options["notification"] ?? "", seconds: seconds, sources: sources)
            print(String(format: "%.0f %.2f %.2f %d", result.throughput, result.percentile(0.5) * 1000, result.percentile(0.99) * 1000, result.errors))
        }
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("pigeon-bench: \(error)\n".utf8))
        exit(1)
    }
}
guard arguments.first == "ingest" else {
    FileHandle.standardError.write(Data("usage: pigeon-bench decode-rss | pigeon-bench apns-token KEY.p8 KEY_ID TEAM_ID | pigeon-bench register --port P --clients N --seconds S | pigeon-bench ingest --port P --clients N --recipients R --seconds S [--rate RPS] [--run-id ID]\n".utf8))
    exit(2)
}
arguments = arguments.dropFirst()
while let key = arguments.first, key.hasPrefix("--"), arguments.count >= 2 {
    options[String(key.dropFirst(2))] = arguments[arguments.index(after: arguments.startIndex)]
    arguments = arguments.dropFirst(2)
}
let benchmark = IngestBenchmark(
    host: options["host"] ?? "127.0.0.1",
    port: UInt16(options["port"] ?? "8080") ?? 8080,
    clients: Int(options["clients"] ?? "1") ?? 1,
    recipients: Int(options["recipients"] ?? "1") ?? 1,
    seconds: Double(options["seconds"] ?? "10") ?? 10,
    rate: options["rate"].flatMap(Double.init),
    runId: options["run-id"] ?? UUID().uuidString.prefix(8).lowercased())
do {
    let result = try benchmark.run()
    print(String(format: "%d %d %.0f %.2f %.2f %d", benchmark.clients, benchmark.recipients, result.throughput,
                 result.percentile(0.5) * 1000, result.percentile(0.99) * 1000, result.errors))
} catch {
    FileHandle.standardError.write(Data("pigeon-bench: \(error)\n".utf8))
    exit(1)
}
