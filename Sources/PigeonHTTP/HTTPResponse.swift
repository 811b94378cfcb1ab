import Foundation

/// What a handler answers.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: Data

    public init(status: Int, headers: [(name: String, value: String)] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with a text body and the given content type.
    public static func text(
        _ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", contentType)], body: Data(text.utf8))
    }
}
