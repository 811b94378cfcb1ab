#if PIGEON_FUZZ
import Foundation
@testable import PigeonHTTP

/// A fuzz input read as a request the HTTP server has already parsed: a request line
/// (`METHOD TARGET`), `name: value` header lines, a blank line, the body. Anything goes: a missing
/// part is empty.
enum HTTPRequestText {
    static func parse(_ data: Data) -> HTTPRequest {
        let bytes = [UInt8](data)
        let split = bytes.indices.first { bytes[$0] == 0x0A && $0 + 1 < bytes.count && bytes[$0 + 1] == 0x0A }
        let head = String(decoding: bytes[..<(split ?? bytes.count)], as: UTF8.self)
        let body = split.map { Data(bytes[($0 + 2)...]) } ?? Data()
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false)
        let requestLine = lines.isEmpty ? "" : lines.removeFirst()
        let words = requestLine.split(separator: " ", maxSplits: 1)
        let target = words.count > 1 ? String(words[1]) : ""
        let question = target.firstIndex(of: "?")
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPRequest(
            method: words.first.map(String.init) ?? "", path: String(target[..<(question ?? target.endIndex)]),
            query: question.map { HTTPRequest.parseQuery(String(target[target.index(after: $0)...])) } ?? [],
            headers: headers, body: body, bodyTooLarge: body.count > 4096, peer: "127.0.0.1")
    }
}
#endif
