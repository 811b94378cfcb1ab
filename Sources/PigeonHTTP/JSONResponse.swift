import Foundation

/// JSON bodies for the HTTP APIs (the device API, PassKit): sorted keys, no caching.
package enum JSONResponse {
    package static func make(_ status: Int, _ object: [String: Any]) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json; charset=utf-8"), ("Cache-Control", "no-store")], body: data)
    }
}
