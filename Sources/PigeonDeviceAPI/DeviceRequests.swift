import Foundation
import PigeonDomain
import PigeonCrypto
import PigeonHTTP
import PushCore

/// The JSON bodies of the device API, parsed and checked: every field present, a string,
/// non-empty and within its limit.
package struct JSONFields {
    /// Device-API bodies are small; anything larger is refused before parsing.
    package static let maximumBodyBytes = 16 * 1024
    package static let maximumIdentifierLength = 256

    private let object: [String: Any]

    package init(_ body: Data) throws(APIError) {
        guard body.count <= Self.maximumBodyBytes else {
            throw APIError(413, "BODY_TOO_LARGE", "request bodies of the device API are at most \(Self.maximumBodyBytes) bytes")
        }
        guard !body.isEmpty else { throw .badRequest("MALFORMED_JSON", "the request body is empty; expected a JSON object") }
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            throw .badRequest("MALFORMED_JSON", "the request body is not a JSON object")
        }
        self.object = object
    }

    /// A required string field of at most `maxLength` UTF-8 bytes.
    package func string(_ name: String, maxLength: Int = maximumIdentifierLength) throws(APIError) -> String {
        guard let raw = object[name], !(raw is NSNull) else { throw .badRequest("MISSING_FIELD", "'\(name)' is required") }
        guard let value = raw as? String else { throw .badRequest("INVALID_FIELD", "'\(name)' must be a string") }
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty else { throw .badRequest("INVALID_FIELD", "'\(name)' must not be empty") }
        guard value.utf8.count <= maxLength else {
            throw .badRequest("FIELD_TOO_LONG", "'\(name)' is longer than \(maxLength) bytes")
        }
        guard !ControlCharacters.present(in: value) else {
            throw .badRequest("INVALID_FIELD", "'\(name)' contains control characters (CR, LF, NUL, …)")
        }
        return value
    }

    /// A field as parsed, whatever its type (nil when absent).
    package func raw(_ name: String) -> Any? { object[name] }

    /// An optional string field: nil when absent or null, else checked as ``string(_:maxLength:)``.
    package func optionalString(_ name: String, maxLength: Int = maximumIdentifierLength) throws(APIError) -> String? {
        guard let raw = object[name], !(raw is NSNull) else { return nil }
        return try string(name, maxLength: maxLength)
    }
}

/// `POST /api/v1/devices/register`.
package struct RegisterRequest {
    package var identity: DeviceIdentity
    package var pushToken: String
    /// `encryptionKey`: absent (a refresh keeps the device's key), `null` (removed), or a key.
    package var encryptionKey: EncryptionKeyUpdate = .keep

    /// `apps`: the configured apps by id, each with the hosts its Web Push subscriptions may
    /// name; `appId` must name one of them (absent: the default app).
    package init(_ body: Data, apps: [String: WebPushHosts] = [PushRoute.defaultApp: WebPushHosts(patterns: [])]) throws(APIError) {
        let fields = try JSONFields(body)
        let platformName = try fields.string("platform", maxLength: 16)
        guard let platform = Platform(rawValue: platformName) else {
            throw .badRequest("INVALID_PLATFORM", "'platform' must be one of \(Platform.allCases.map(\.rawValue).joined(separator: ", ")), got '\(platformName)'")
        }
        let appId = try fields.optionalString("appId", maxLength: 64).map { $0 == "default" ? PushRoute.defaultApp : $0 } ?? PushRoute.defaultApp
        guard let webPushHosts = apps[appId] else {
            throw .badRequest("UNKNOWN_APP", "'appId' names no app this gateway serves")
        }
        let environmentName = try fields.optionalString("environment", maxLength: 16) ?? PushEnvironment.production.rawValue
        guard let environment = PushEnvironment(rawValue: environmentName) else {
            throw .badRequest("INVALID_FIELD", "'environment' must be production or sandbox")
        }
        identity = DeviceIdentity(
            bankClientId: try fields.string("bankClientId"), userId: try fields.string("userId"),
            deviceId: try fields.string("deviceId"), platform: platform, appId: appId,
            // Only APNs tokens belong to an environment.
            environment: platform == .ios ? environment : .production)
        encryptionKey = try Self.encryptionKey(fields.raw("encryptionKey"))
        if platform == .web {
            pushToken = try Self.webSubscription(fields.raw("pushToken"), hosts: webPushHosts).storedForm
            return
        }
        let tokenType = try fields.optionalString("tokenType", maxLength: 16) ?? "token"
        pushToken = try fields.string("pushToken", maxLength: PushTokenFormat.fcmLength.upperBound)
        switch (tokenType, platform) {
        case ("token", _):
            if let problem = PushTokenFormat.problem(with: pushToken, for: platform) {
                throw .badRequest("INVALID_PUSH_TOKEN", problem)
            }
            if FirebaseInstallationID.fid(inStored: pushToken) != nil {
                throw .badRequest("INVALID_PUSH_TOKEN", "a registration token does not start with 'fid:'; send a Firebase Installation ID with \"tokenType\": \"fid\"")
            }
        case ("fid", .android):
            // CONTRACT §9: addressed with FCM v1's `fid` target.
            if let problem = FirebaseInstallationID.problem(pushToken) { throw .badRequest("INVALID_PUSH_TOKEN", problem) }
            pushToken = FirebaseInstallationID.stored(pushToken)
        case ("fid", _):
            throw .badRequest("INVALID_FIELD", "'tokenType' fid is for ANDROID (Firebase) devices only")
        default:
            throw .badRequest("INVALID_FIELD", "'tokenType' must be token or fid")
        }
    }
}

extension RegisterRequest {
    /// The `encryptionKey` member (CONTRACT §8): `{"keyId", "publicKey"}` with a key id of 1–64
    /// of `A-Z a-z 0-9 _ -` and a public key that is the base64url (no padding) of a 65-byte
    /// uncompressed point on P-256. Anything else is 400 `BAD_ENCRYPTION_KEY`.
    package static func encryptionKey(_ raw: Any?) throws(APIError) -> EncryptionKeyUpdate {
        guard let raw else { return .keep }
        if raw is NSNull { return .remove }
        func refused(_ reason: String) -> APIError { .badRequest("BAD_ENCRYPTION_KEY", "'encryptionKey' \(reason)") }
        guard let object = raw as? [String: Any] else { throw refused("must be an object {\"keyId\", \"publicKey\"} or null") }
        guard Set(object.keys).isSubset(of: ["keyId", "publicKey"]) else { throw refused("has members other than keyId and publicKey") }
        guard let keyId = object["keyId"] as? String, DeviceEncryptionKey.isValidKeyId(keyId) else {
            throw refused("keyId must be 1 to 64 of A-Z a-z 0-9 _ -")
        }
        guard let text = object["publicKey"] as? String, text.utf8.count <= 100,
              text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }),
              let point = Base64URL.decode(text) else {
            throw refused("publicKey must be base64url without padding")
        }
        guard point.count == 65, point.first == 4 else { throw refused("publicKey must be a 65-byte uncompressed P-256 point, got \(point.count) bytes") }
        guard (try? P256PublicKey(point: point)) != nil else { throw refused("publicKey is not a point on P-256") }
        return .replace(DeviceEncryptionKey(keyId: keyId, publicKey: point))
    }

    /// A browser's subscription, checked: its shape, its key a point on P-256, its endpoint's
    /// host one the app allows (the gateway will POST to it).
    package static func webSubscription(_ raw: Any?, hosts: WebPushHosts) throws(APIError) -> WebPushSubscription {
        guard let raw, !(raw is NSNull) else { throw .badRequest("MISSING_FIELD", "'pushToken' is required") }
        // Some apps send the subscription as the string JSON.stringify made of it.
        let object = (raw as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } ?? raw
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(json: object)
        } catch {
            throw .badRequest("INVALID_PUSH_TOKEN", error.description)
        }
        guard let point = Base64URL.decode(subscription.p256dh), (try? P256PublicKey(point: point)) != nil else {
            throw .badRequest("INVALID_PUSH_TOKEN", "'pushToken.keys.p256dh' is not a point on P-256")
        }
        guard hosts.allows(subscription) else {
            throw .badRequest("WEB_PUSH_HOST_NOT_ALLOWED", "this gateway does not send Web Push to \(subscription.host)\(subscription.port.map { ":\($0)" } ?? "")")
        }
        return subscription
    }
}

/// `POST /api/v1/devices/verify`.
package struct VerifyRequest {
    package var bankClientId: String
    package var userId: String
    package var deviceId: String
    /// The id the 202 answer of `/register` carried.
    package var registrationId: String
    package var verificationCode: String

    package init(_ body: Data) throws(APIError) {
        let fields = try JSONFields(body)
        bankClientId = try fields.string("bankClientId")
        userId = try fields.string("userId")
        deviceId = try fields.string("deviceId")
        registrationId = try fields.string("registrationId", maxLength: 128)
        verificationCode = try fields.string("verificationCode", maxLength: 64)
    }
}
