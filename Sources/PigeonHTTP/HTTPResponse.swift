import Foundation

/// What a handler answers.
package struct HTTPResponse: Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: Data
    /// Close the connection without sending anything (test peers imitating a failing server).
    package var dropConnection = false

    package init(status: Int, headers: [(name: String, value: String)] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// No answer at all: the connection is closed.
    package static var dropped: HTTPResponse {
        var response = HTTPResponse(status: 500)
        response.dropConnection = true
        return response
    }

    /// A response with a text body and the given content type.
    package static func text(
        _ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", contentType)], body: Data(text.utf8))
    }
}
