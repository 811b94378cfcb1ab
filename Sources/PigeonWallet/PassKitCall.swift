import Foundation
import PigeonCore
import PigeonDomain
import PigeonCrypto
import PigeonHTTP

/// One call of Apple's PassKit web service (CONTRACT §7), read and checked from the request alone:
/// path parts, method, `ApplePass` token, body and conditional headers. Nothing here touches the
/// store, so every byte a phone can send is parsed by pure code (and fuzzed as such).
package enum PassKitCall: Equatable {
    /// `POST v1/devices/{device}/registrations/{passType}/{serial}` with `{"pushToken": …}`.
    case register(device: String, pass: PassIdentity, pushToken: String, authenticationDigest: Data)
    /// `DELETE v1/devices/{device}/registrations/{passType}/{serial}`.
    case unregister(device: String, pass: PassIdentity, authenticationDigest: Data)
    /// `GET v1/devices/{device}/registrations/{passType}?passesUpdatedSince=…`.
    case serials(device: String, passType: String, since: Int64?)
    /// `GET v1/passes/{passType}/{serial}`, with `If-Modified-Since` when sent and readable.
    case pass(PassIdentity, authenticationDigest: Data, ifModifiedSince: Date?)
    /// `POST v1/log`: the messages to log, escaped and bounded.
    case log(messages: [String])

    /// The largest registration body (`{"pushToken": …}`).
    package static let maximumRegistrationBytes = 4 * 1024
    /// The largest `/v1/log` body, how many of its messages are logged, and how long each may be.
    package static let maximumLogBytes = 4 * 1024
    package static let maximumLogMessages = 10
    package static let maximumLogMessageLength = 256

    /// The parts of `path` after the service's `prefix` (`/passkit`), empty ones kept so that
    /// `v1//log` does not pass for `v1/log`.
    /// The path arrives as the client sent it: each segment is percent-decoded once (a segment
    /// that does not decode is kept as sent, and its identifier check refuses the `%`).
    package static func parts(of path: String, prefix: String) -> [String] {
        path.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false).map { segment in
            String(segment).removingPercentEncoding ?? String(segment)
        }
    }

    /// The call `request` makes, or why it is refused (a status and a one-line reason). Checks run
    /// in the order a phone can act on: the route, the body's size, identifiers, the token, the body.
    package static func parse(_ request: HTTPRequest, parts: [String]) throws(PassKitRefusal) -> PassKitCall {
        switch (request.method, parts.count, parts.first, parts.count > 1 ? parts[1] : nil, parts.count > 3 ? parts[3] : nil) {
        case ("POST", 6, "v1", "devices", "registrations"):
            if request.bodyTooLarge { throw PassKitRefusal(413, "a registration's body is at most \(maximumRegistrationBytes) bytes") }
            try checkIdentifier(parts[2], "deviceLibraryIdentifier")
            let pass = try identity(parts[4], parts[5])
            let digest = try authentication(request)
            guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any],
                  let pushToken = object["pushToken"] as? String else {
                throw PassKitRefusal(400, "the body must be a JSON object with pushToken")
            }
            guard PassFields.isPushToken(pushToken) else { throw PassKitRefusal(400, "pushToken must be an APNs device token (hexadecimal)") }
            return .register(device: parts[2], pass: pass, pushToken: pushToken, authenticationDigest: digest)
        case ("DELETE", 6, "v1", "devices", "registrations"):
            try checkIdentifier(parts[2], "deviceLibraryIdentifier")
            let pass = try identity(parts[4], parts[5])
            return .unregister(device: parts[2], pass: pass, authenticationDigest: try authentication(request))
        case ("GET", 5, "v1", "devices", "registrations"):
            try checkIdentifier(parts[2], "deviceLibraryIdentifier")
            try checkIdentifier(parts[4], "passTypeIdentifier")
            // The tag is opaque to the device; one Pigeon did not hand out means "everything".
            let since = request.query.first { $0.name == "passesUpdatedSince" }?.value.flatMap { $0.utf8.count <= 20 ? Int64($0) : nil }
            return .serials(device: parts[2], passType: parts[4], since: since)
        case ("GET", 4, "v1", "passes", _):
            let pass = try identity(parts[2], parts[3])
            let digest = try authentication(request)
            return .pass(pass, authenticationDigest: digest, ifModifiedSince: request.header("if-modified-since").flatMap(HTTPDate.parse))
        case ("POST", 2, "v1", "log", nil):
            if request.bodyTooLarge { throw PassKitRefusal(413, "a log's body is at most \(maximumLogBytes) bytes") }
            guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any],
                  let logs = object["logs"] as? [Any] else {
                throw PassKitRefusal(400, "the body must be a JSON object with logs, a list of strings")
            }
            return .log(messages: logs.prefix(maximumLogMessages).compactMap { $0 as? String }.map {
                LogText.escaped(String($0.prefix(maximumLogMessageLength)), limit: maximumLogMessageLength)
            })
        case (_, 6, "v1", "devices", "registrations"):
            throw .methodNotAllowed("POST, DELETE")
        case (_, 5, "v1", "devices", "registrations"), (_, 4, "v1", "passes", _):
            throw .methodNotAllowed("GET")
        case (_, 2, "v1", "log", nil):
            throw .methodNotAllowed("POST")
        default:
            throw PassKitRefusal(404, "no such resource")
        }
    }

    /// A bounded route label for metrics.
    package static func route(_ parts: [String]) -> String {
        switch (parts.count, parts.first, parts.count > 1 ? parts[1] : nil) {
        case (6, "v1", "devices"): "passkit_registration"
        case (5, "v1", "devices"): "passkit_serials"
        case (4, "v1", "passes"): "passkit_pass"
        case (2, "v1", "log"): "passkit_log"
        default: "passkit"
        }
    }

    // MARK: Checks

    /// The SHA-256 digest of the `ApplePass` token, or 401.
    private static func authentication(_ request: HTTPRequest) throws(PassKitRefusal) -> Data {
        guard let header = request.header("authorization"), header.hasPrefix("ApplePass ") else { throw .unauthorized }
        let token = String(header.dropFirst("ApplePass ".count))
        guard PassFields.authenticationTokenProblem(token) == nil else { throw .unauthorized }
        return SecretToken.digest(token)
    }

    private static func identity(_ passType: String, _ serial: String) throws(PassKitRefusal) -> PassIdentity {
        try checkIdentifier(passType, "passTypeIdentifier")
        try checkIdentifier(serial, "serialNumber")
        return PassIdentity(passTypeIdentifier: passType, serialNumber: serial)
    }

    private static func checkIdentifier(_ value: String, _ name: String) throws(PassKitRefusal) {
        if let problem = PassFields.identifierProblem(value, name: name) { throw PassKitRefusal(400, problem) }
    }
}

/// A PassKit request refused with a status and a one-line reason (and `Allow` for 405).
package struct PassKitRefusal: Error, Equatable {
    package var status: Int
    package var message: String
    package var allow: String?

    package init(_ status: Int, _ message: String, allow: String? = nil) {
        self.status = status
        self.message = message
        self.allow = allow
    }

    package static let unauthorized = PassKitRefusal(401, "missing or wrong ApplePass authentication token")

    package static func methodNotAllowed(_ allowed: String) -> PassKitRefusal {
        PassKitRefusal(405, "method not allowed; use \(allowed)", allow: allowed)
    }

    package var response: HTTPResponse {
        var response = HTTPResponse.text(status, message + "\n")
        if let allow { response.headers.append(("Allow", allow)) }
        return response
    }
}
