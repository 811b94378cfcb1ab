import Foundation

/// A browser's push subscription (the `PushSubscription` object of the Push API): where to send
/// (`endpoint`, a URL of the browser vendor's push service) and the keys to encrypt to
/// (`keys.p256dh`, `keys.auth`, base64url). Registered as a WEB device's push token and stored
/// as its canonical JSON.
package struct WebPushSubscription: Sendable, Equatable {
    package let endpoint: String
    /// The subscriber's P-256 public key, base64url (65 bytes decoded).
    package let p256dh: String
    /// The subscriber's auth secret, base64url (16 bytes decoded).
    package let auth: String
    /// The endpoint's host, lower-cased.
    package let host: String
    /// The endpoint's port when it names one.
    package let port: Int?
    /// `scheme://host[:port]` of the endpoint: the audience of its VAPID token.
    package let origin: String

    /// Endpoints are URLs of at most this many bytes.
    package static let maximumEndpointLength = 2048

    package init(endpoint: String, p256dh: String, auth: String) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        // Parsed once: the engine reads them for every push.
        let url = URL(string: endpoint)
        host = url?.host?.lowercased() ?? ""
        port = url?.port
        origin = url.flatMap { url in
            url.scheme.flatMap { scheme in url.host.map { host in url.port.map { "\(scheme)://\(host):\($0)" } ?? "\(scheme)://\(host)" } }
        } ?? ""
    }

    /// A subscription from its JSON object (`{"endpoint", "keys": {"p256dh", "auth"}}`), or
    /// why it is not one. Only the shape is checked here; whether the key is a point on the
    /// curve, and whether the endpoint's host is allowed, are checked by who knows.
    package init(json object: Any) throws(WebPushSubscriptionError) {
        guard let object = object as? [String: Any] else { throw .init("the Web Push pushToken must be the browser's subscription object") }
        guard let endpoint = object["endpoint"] as? String else { throw .init("'pushToken.endpoint' is required") }
        guard let keys = object["keys"] as? [String: Any], let p256dh = keys["p256dh"] as? String, let auth = keys["auth"] as? String else {
            throw .init("'pushToken.keys.p256dh' and 'pushToken.keys.auth' are required")
        }
        guard endpoint.utf8.count <= Self.maximumEndpointLength, let url = URL(string: endpoint), url.scheme?.lowercased() == "https",
              let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else {
            throw .init("'pushToken.endpoint' must be an https:// URL of at most \(Self.maximumEndpointLength) bytes, without credentials")
        }
        guard ControlCharacters.present(in: endpoint) == false else { throw .init("'pushToken.endpoint' contains control characters") }
        guard Self.decodedCount(p256dh) == 65, p256dh.hasPrefix("B") else { throw .init("'pushToken.keys.p256dh' must be a base64url P-256 point (65 bytes)") }
        guard Self.decodedCount(auth) == 16 else { throw .init("'pushToken.keys.auth' must be a base64url 16-byte secret") }
        self.init(endpoint: endpoint, p256dh: p256dh, auth: auth)
    }

    /// A subscription as stored (the canonical JSON of ``storedForm``).
    package init?(stored: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(stored.utf8)), let parsed = try? Self(json: object) else { return nil }
        self = parsed
    }

    /// The canonical JSON stored as the device's push token.
    package var storedForm: String {
        let object: [String: Any] = ["endpoint": endpoint, "keys": ["auth": auth, "p256dh": p256dh]]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The byte count of a base64url text (unpadded), or nil when it is not base64url.
    static func decodedCount(_ text: String) -> Int? {
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let trimmed = text.hasSuffix("=") ? String(text.reversed().drop { $0 == "=" }.reversed()) : text
        guard !trimmed.isEmpty, trimmed.allSatisfy(alphabet.contains), trimmed.count % 4 != 1 else { return nil }
        return trimmed.count * 3 / 4
    }
}

/// Why a registration's Web Push subscription was refused.
package struct WebPushSubscriptionError: Error, Sendable, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}

/// The hosts Web Push endpoints may name (`webPushAllowedHosts`): a subscription endpoint is
/// chosen by whoever registers, so without this the gateway would POST wherever it is told (an
/// SSRF). `fcm.googleapis.com` allows that host only; `*.notify.windows.com` any host below it;
/// either on HTTPS's own port (443) only. `127.0.0.1:2197` allows that host on that port (a
/// simulator): a pattern never opens every port of a host.
package struct WebPushHosts: Sendable, Equatable {
    package var patterns: [String]

    package init(patterns: [String]) {
        self.patterns = patterns.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    /// `webPushAllowedHosts`'s comma-separated form.
    package init(list: String) {
        self.init(patterns: list.split(separator: ",").map(String.init))
    }

    /// Whether an endpoint on `host` (and `port`, when the URL names one) may be called.
    package func allows(host: String, port: Int?) -> Bool {
        let host = host.lowercased()
        return patterns.contains { pattern in
            var name = Substring(pattern), allowedPort = 443
            if let colon = pattern.lastIndex(of: ":"), let number = Int(pattern[pattern.index(after: colon)...]) {
                name = pattern[..<colon]
                allowedPort = number
            }
            guard (port ?? 443) == allowedPort else { return false }
            if name.hasPrefix("*.") { return host.hasSuffix(name.dropFirst(1)) && host.count > name.count - 1 }
            return host == name
        }
    }

    /// Whether `subscription`'s endpoint may be called.
    package func allows(_ subscription: WebPushSubscription) -> Bool {
        allows(host: subscription.host, port: subscription.port)
    }
}
