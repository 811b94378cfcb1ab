import Foundation

/// Builds FCM HTTP v1 `messages:send` requests: a notification (the text), data (all values as
/// strings, as FCM requires), and Android `ttl` and `priority`.
package struct FCMRequestBuilder: Sendable {
    /// FCM's limit for a message's payload.
    package static let maximumPayloadBytes = 4096

    package var projectId: String

    package init(projectId: String) {
        self.projectId = projectId
    }

    package func request(for message: PushMessage, registrationToken: String, now: Date) throws(PushMessageError) -> PushRequest {
        let prepared = try prepare(message, now: now)
        return PushRequest(path: prepared.path, headers: prepared.headers, body: prepared.body(registrationToken: registrationToken))
    }

    /// What every device's request for `message` shares, built once per notification: the body
    /// is written around the place of the registration token (the last member of `message`),
    /// so a device's body is two copies and its escaped token.
    package func prepare(_ message: PushMessage, now: Date) throws(PushMessageError) -> FCMPreparedMessage {
        let ttl = max(0, Int64(message.expiresAt.timeIntervalSince(now).rounded(.down)))
        if let data = message.confidentialData {
            // CONTRACT §8: data only (no notification block, which Google would show), high priority.
            return try Self.checked(FCMPreparedMessage(path: path, message: [
                ("android", .object([
                    ("collapse_key", .string(String(message.notificationId.prefix(64)))),
                    ("priority", .string("HIGH")), ("ttl", .string("\(ttl)s")),
                ])),
                ("data", .object(data)),
            ]), delivered: JSONValue.object([("data", .object(data))]).encoded)
        }
        // FCM wants every data value as a string; keys sorted so a payload is reproducible.
        let data = message.dataMembers
        var notification: [(String, JSONValue)] = [("body", .string(message.text))]
        if let sound = message.sound { notification.append(("sound", .string(sound))) }
        // A push repeated after a crash replaces the first on the screen (CONTRACT §9).
        notification.append(("tag", .string(message.collapseIdentifier)))
        let android: [(String, JSONValue)] = [
            ("collapse_key", .string(String(message.notificationId.prefix(64)))),
            ("notification", .object(notification)),
            ("priority", .string(message.urgency == .high ? "HIGH" : "NORMAL")),
            ("ttl", .string("\(ttl)s")),
        ]
        // FCM's limit covers what reaches the device: the notification and the data.
        let delivered = JSONValue.object([("notification", .object(notification)), ("data", .object(data))]).encoded
        return try Self.checked(FCMPreparedMessage(path: path, message: [
            ("android", .object(android)),
            ("data", .object(data)),
            ("notification", .object([("body", .string(message.text))])),
        ]), delivered: delivered)
    }

    private var path: String { "/v1/projects/\(projectId)/messages:send" }

    private static func checked(_ prepared: FCMPreparedMessage, delivered: Data) throws(PushMessageError) -> FCMPreparedMessage {
        guard delivered.count <= maximumPayloadBytes else {
            throw .payloadTooLarge(bytes: delivered.count, limit: maximumPayloadBytes)
        }
        return prepared
    }
}

/// An FCM request without its registration token: the path, headers and the body around the
/// token's place, built once per message and used for every device it goes to.
package struct FCMPreparedMessage: Sendable, Equatable {
    package var path: String
    package var headers: [String: String] {
        didSet { headerLines = APNsPreparedMessage.lines(headers) }
    }
    /// ``headers`` as `name: value` lines, formatted once for every device's request.
    package private(set) var headerLines: [String]
    var bodyPrefix: [UInt8]
    var bodySuffix: [UInt8]
    /// ``bodyPrefix`` with FCM v1's `fid` member in place of `token`: for a device registered by
    /// its Firebase Installation ID (`nil` where the service has no such target: Huawei).
    var installationPrefix: [UInt8]?

    /// A JSON request of `{…before, "message": {…message, "token": <token>}}`, written around
    /// the token's place: the token is the last member of `message`, which is the last member of
    /// the document; with `tokenList` it is a list of that one token (Huawei).
    init(path: String, before: [(String, JSONValue)] = [], message: [(String, JSONValue)], tokenList: Bool = false) {
        // The document without its two closing braces, then the token's member.
        let document = Array(JSONValue.object(before + [("message", .object(message))]).encoded.dropLast(2))
        self.init(path: path, headers: ["content-type": "application/json; charset=utf-8"],
                  bodyPrefix: document + Array((tokenList ? #","token":["# : #","token":"#).utf8),
                  bodySuffix: Array((tokenList ? "]}}" : "}}").utf8))
        if !tokenList { installationPrefix = document + Array(#","fid":"#.utf8) }
    }

    init(path: String, headers: [String: String], bodyPrefix: [UInt8], bodySuffix: [UInt8]) {
        self.path = path
        self.headers = headers
        self.headerLines = APNsPreparedMessage.lines(headers)
        self.bodyPrefix = bodyPrefix
        self.bodySuffix = bodySuffix
    }

    /// The body for one device: its registration token, or — stored as
    /// ``FirebaseInstallationID/stored(_:)`` — its Firebase Installation ID as the `fid` target.
    package func body(registrationToken: String) -> Data {
        var bytes: [UInt8]
        var address = Substring(registrationToken)
        if let installationPrefix, let fid = FirebaseInstallationID.fid(inStored: registrationToken) {
            bytes = installationPrefix
            address = fid
        } else {
            bytes = bodyPrefix
        }
        bytes.reserveCapacity(bytes.count + address.utf8.count + bodySuffix.count + 2)
        JSONValue.writeString(String(address), into: &bytes)
        bytes.append(contentsOf: bodySuffix)
        return Data(bytes)
    }
}
