import Foundation

/// How a confidential notification travels to one device (CONTRACT §8): sealed to the device's
/// key, or announced only, for the app to fetch with its bearer token.
package enum ConfidentialMode: Sendable, Equatable {
    case encrypted(E2EEnvelope)
    case fetch

    /// The metric label: `encrypted` or `fetch`.
    package var label: String {
        switch self {
        case .encrypted: "encrypted"
        case .fetch: "fetch"
        }
    }
}

/// The `v1` envelope of a push sealed to a device key: `{"v": 1, "kid", "epk", "salt", "ct"}`,
/// binary members in base64url without padding.
package struct E2EEnvelope: Sendable, Equatable {
    package var keyId: String
    package var ephemeralPublicKey: Data
    package var salt: Data
    package var ciphertext: Data

    package init(keyId: String, ephemeralPublicKey: Data, salt: Data, ciphertext: Data) {
        self.keyId = keyId
        self.ephemeralPublicKey = ephemeralPublicKey
        self.salt = salt
        self.ciphertext = ciphertext
    }

    /// The envelope as a JSON object (APNs, Web Push).
    package var json: JSONValue {
        .object([
            ("v", .int(1)), ("kid", .string(keyId)), ("epk", .string(Self.base64URL(ephemeralPublicKey))),
            ("salt", .string(Self.base64URL(salt))), ("ct", .string(Self.base64URL(ciphertext))),
        ])
    }

    /// The envelope as a JSON string's value (FCM, Huawei and RuStore data carry strings only).
    package var text: String { String(decoding: json.encoded, as: UTF8.self) }

    static func base64URL(_ data: Data) -> String {
        var text = data.base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.last == "=" { text.removeLast() }
        return text
    }
}

/// What a sealed push carries once opened: `{"notificationId", "text", "type", "target"?,
/// "details"?}` (CONTRACT §8), the UTF-8 JSON the sealing pads and encrypts.
package enum SealedContent {
    /// The plaintext JSON; `details` (the notification's details map) in the order given.
    package static func json(notificationId: String, text: String, type: String, target: String?, details: [(String, String)]?) -> Data {
        var members: [(String, JSONValue)] = [("notificationId", .string(notificationId)), ("text", .string(text)), ("type", .string(type))]
        if let target { members.append(("target", .string(target))) }
        if let details {
            var seen = Set<String>()
            // A repeated key keeps its first value, as the details endpoint answers it.
            members.append(("details", .object(details.filter { seen.insert($0.0).inserted }.map { ($0.0, JSONValue.string($0.1)) })))
        }
        return JSONValue.object(members).encoded
    }
}

extension PushMessage {
    /// The members of a confidential payload after `aps` (APNs) or the alert (Web Push): the
    /// notification id, then `e2e` or `fetch: true`. `nil` for a message in clear.
    var confidentialMembers: [(String, JSONValue)]? {
        switch confidential {
        case nil: nil
        case .encrypted(let envelope): [("notificationId", .string(notificationId)), ("e2e", envelope.json)]
        case .fetch: [("notificationId", .string(notificationId)), ("fetch", .bool(true))]
        }
    }

    /// The data of a confidential push to Android (FCM, Huawei, RuStore: strings only): the
    /// notification id, then `e2e` as a string or `fetch: "true"`; a data-only message's data
    /// (sent the same way: no notification block); `nil` for a message in clear.
    var confidentialData: [(String, JSONValue)]? {
        switch confidential {
        case nil: dataOnly ? dataMembers : nil
        case .encrypted(let envelope): [("notificationId", .string(notificationId)), ("e2e", .string(envelope.text))]
        case .fetch: [("notificationId", .string(notificationId)), ("fetch", .string("true"))]
        }
    }
}
