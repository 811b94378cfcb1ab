#if PIGEON_FUZZ
import BankContract
import Foundation
import PigeonConsole
import PigeonDomain
import PushCore
import SOAPCodec

/// The parsers of the outside bytes the first round of targets did not reach: the console's forms
/// and API paths (an operator's browser, or anyone reaching the bank listener), the bank's Live
/// Activity fields, and the bank proxy's SOAP answers (the bank's server, or whoever answers in
/// its place).
enum MoreFuzzTargets {
    /// A console request: the first line is its path (`/console/…?query`), the rest its form body.
    static func console(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let target = lines.first.map(String.init) ?? ""
        let body = Data((lines.count > 1 ? String(lines[1]) : "").utf8)
        let split = target.split(separator: "?", maxSplits: 1)
        let path = split.first.map(String.init) ?? ""
        if let segments = ConsoleEndpoint.apiSegments(path) {
            precondition((1...5).contains(segments.count) && segments.allSatisfy { !$0.isEmpty && $0.utf8.count <= 256 }, "an API segment outside its limits")
        }
        let arguments: [(name: String, value: String?)] = split.count > 1 ? split[1].split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : nil)
        } : []
        _ = FormFields.query(arguments)
        _ = FormFields.parse(body)
    }

    /// The bank's Live Activity fields: identifiers, channel ids and JSON objects as the SOAP
    /// operations check them, and an accepted content state built into the pushes.
    static func activity(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        _ = ActivityFields.identifierProblem(text, name: "activityId")
        _ = ActivityFields.channelIdProblem(text, name: "channelId")
        guard ActivityFields.objectProblem(text, name: "contentState") == nil else { return }
        let event = LiveActivityEvent(kind: .update, timestamp: 1_796_000_000, contentState: text, alertTitle: text, alertBody: text,
                                      attributesType: "Fuzz", attributes: text)
        _ = try? LiveActivityRequests.activity(event, appTopic: "com.example.bank")
        _ = try? LiveActivityRequests.broadcast(event, channelId: "Zm9vYmFy")
        _ = LiveActivityRequests.androidData(activityId: "a-1", event: event, expiresAt: Date(timeIntervalSince1970: 1_796_000_060))
    }

    private static let outbound = SOAPCodec(service: OutboundService.description)

    /// The bank proxy's answers, for every operation the gateway calls.
    static func bankAnswer(_ data: Data) {
        for operation in OutboundService.description.operations {
            _ = try? outbound.decodeResponse(data, for: operation)
        }
    }
}
#endif
