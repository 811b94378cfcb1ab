import Foundation


/// A device-API error: an HTTP status and a JSON body `{"error": CODE, "message": …}` (CONTRACT §2).
package struct APIError: Error, Equatable {
    package var status: Int
    package var code: String
    package var message: String
    /// Seconds for `Retry-After` (429 answers).
    package var retryAfter: Int?
    /// The methods the resource takes, for `Allow` (405 answers).
    package var allow: String?
    /// The challenge of a 401 answer, for `WWW-Authenticate`.
    package var wwwAuthenticate: String?

    package init(_ status: Int, _ code: String, _ message: String, retryAfter: Int? = nil, allow: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.allow = allow
    }

    package var response: HTTPResponse {
        var response = JSONResponse.make(status, ["error": code, "message": message])
        if let retryAfter { response.headers.append(("Retry-After", String(retryAfter))) }
        if let allow { response.headers.append(("Allow", allow)) }
        if let wwwAuthenticate { response.headers.append(("WWW-Authenticate", wwwAuthenticate)) }
        return response
    }

    /// 405 naming the methods the resource takes (in the message and in `Allow`).
    package static func methodNotAllowed(_ allow: String) -> APIError {
        APIError(405, "METHOD_NOT_ALLOWED", "use \(allow)", allow: allow)
    }

    package static func rateLimited(retryAfter: Int, _ message: String) -> APIError {
        APIError(429, "RATE_LIMITED", message, retryAfter: retryAfter)
    }

    package static func badRequest(_ code: String, _ message: String) -> APIError { APIError(400, code, message) }
    package static let unauthorized = APIError(401, "UNAUTHORIZED", "missing, unknown, revoked or expired authentication token; register the device again")
}
