import Foundation
import PigeonCore
import PigeonDomain
import PigeonCrypto
import PigeonHTTP

/// The device API (CONTRACT §2): registration and verification following the bank's flow,
/// acknowledgements and notification details behind bearer tokens.
///
/// Nothing identifying a device is a secret: a push token changes only with the bank's consent
/// (`checkSubscriptionAuthorized`, or an SMS code checked by `verifySubscriptionAuthorization`)
/// or with the device's own current bearer token. A verification subscribes exactly the push
/// token of the registration whose single-use id it presents.
package struct DeviceEndpoint: Sendable {
    package static let prefix = "/api/v1/"
    /// The request headers the device API reads: the bearer token.
    package static let requestHeaders: Set<String> = ["authorization"]

    package let registry: any DeviceRegistering
    package let acknowledgements: any AcknowledgementRecording
    /// Nil when `sbiOutboundWebServiceURL` is not set: only known devices can register then.
    package let bank: (any SubscriptionAuthorizing)?
    package let overrideSubscriptions: Bool
    package let tokenLifetime: Duration
    package let limits: DeviceRateLimits
    package let rateLimits: any RateLimitCounting
    package let identifiers: UserIdentifiers
    /// The configured apps by id (``PushRoute/defaultApp`` among them), each with the hosts its
    /// Web Push subscriptions may name: a registration for any other app is refused.
    package let apps: [String: WebPushHosts]
    package let logger: Logger
    package let metrics: MetricsRegistry
    /// Live Activity tokens (CONTRACT §9); `nil`: the calls are unknown.
    package let activities: (any ActivityTokenRecording)?
    /// Told when a token makes waiting activity pushes due: wakes the activity engine.
    package let events: any RequestEvents

    package init(registry: any DeviceRegistering, acknowledgements: any AcknowledgementRecording, bank: (any SubscriptionAuthorizing)?, overrideSubscriptions: Bool, tokenLifetime: Duration, limits: DeviceRateLimits, rateLimits: any RateLimitCounting, identifiers: UserIdentifiers, apps: [String: WebPushHosts], logger: Logger, metrics: MetricsRegistry, activities: (any ActivityTokenRecording)?, events: any RequestEvents = IgnoredRequestEvents()) {
        self.registry = registry
        self.acknowledgements = acknowledgements
        self.bank = bank
        self.overrideSubscriptions = overrideSubscriptions
        self.tokenLifetime = tokenLifetime
        self.limits = limits
        self.rateLimits = rateLimits
        self.identifiers = identifiers
        self.apps = apps
        self.logger = logger
        self.metrics = metrics
        self.activities = activities
        self.events = events
    }

    /// The route template (for metrics) and the answer. An error is labelled with the route of
    /// the call it answers (14,000 rate-limited registrations show as `api_register`), `api` only
    /// for a path that is no call.
    package func handle(_ request: HTTPRequest) async -> (String, HTTPResponse) {
        let parts = request.path.dropFirst(Self.prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let route = Self.route(parts)
        do {
            switch (request.method, route) {
            case ("POST", "api_register"):
                try limits.admitAddress(request.peer)
                return (route, try await register(RegisterRequest(request.body, apps: apps), bearer: bearerToken(request)))
            case ("POST", "api_verify"):
                try limits.admitAddress(request.peer)
                return (route, try await verify(VerifyRequest(request.body)))
            case ("POST", "api_delivered"):
                return (route, try await acknowledge(parts[1], .delivered, request))
            case ("POST", "api_opened"):
                return (route, try await acknowledge(parts[1], .read, request))
            case ("GET", "api_details"):
                return (route, try await details(parts[1], request))
            case (_, "api_activity_start_token"), (_, "api_activity_token"), (_, "api_activity_end"):
                return try await activityCall(request, parts: parts)
            case (_, "api_register"), (_, "api_verify"), (_, "api_delivered"), (_, "api_opened"):
                throw APIError.methodNotAllowed("POST")
            case (_, "api_details"):
                throw APIError.methodNotAllowed("GET")
            default:
                throw APIError(404, "NOT_FOUND", "no such device API call")
            }
        } catch let error as APIError {
            return (route, error.response)
        } catch {
            logger.error("device API call failed", metadata: ["path": String(request.path.prefix(100)), "error": "\(error)"])
            return (route, APIError(503, "UNAVAILABLE", "the gateway cannot serve this call right now; try again").response)
        }
    }

    /// The route template of a device API path (its `parts` after the prefix), whatever the
    /// method: the metrics' label and what ``handle(_:)`` dispatches on.
    static func route(_ parts: [String]) -> String {
        switch (parts.count, parts.first, parts.last) {
        case (2, "devices", "register"): "api_register"
        case (2, "devices", "verify"): "api_verify"
        case (3, "notifications", "delivered"): "api_delivered"
        case (3, "notifications", "opened"): "api_opened"
        case (3, "notifications", "details"): "api_details"
        case (3, "activities", _) where parts[1] == "start-tokens": "api_activity_start_token"
        case (3, "activities", "token"): "api_activity_token"
        case (2, "activities", _): "api_activity_end"
        default: "api"
        }
    }

    // MARK: Registration

    private func register(_ request: RegisterRequest, bearer: String?) async throws -> HTTPResponse {
        let identity = request.identity
        // A known device proves itself with its current bearer token; anything else goes to the bank.
        if let bearer, let known = try await registry.authenticate(digest: SecretToken.digest(bearer)),
           sameDevice(known.identity, identity) {
            let token = newToken()
            try await registry.refresh(device: known.id, pushToken: request.pushToken, environment: identity.environment, token: token.stored,
                                       encryptionKey: request.encryptionKey)
            logger.info("device refreshed its push token", metadata: Self.logged(identity, pushToken: request.pushToken))
            counted("refreshed")
            return subscribed(token.plain)
        }
        let bank = try requireBank()
        try await limits.admitRegistration(bankClientId: identity.bankClientId, userKey: identifiers.comparable(identity.userId), store: rateLimits)
        let question = SubscriptionRequest(bankClientId: identity.bankClientId, userId: identity.userId, deviceId: identity.deviceId, platform: identity.platform.rawValue)
        if try await bankCall({ try await bank.checkSubscriptionAuthorized(question) }) {
            let token = newToken()
            try await registry.subscribe(identity, pushToken: request.pushToken, token: token.stored, override: overrideSubscriptions,
                                         encryptionKey: request.encryptionKey.newKey)
            logger.info("device subscribed", metadata: Self.logged(identity, pushToken: request.pushToken))
            counted("subscribed")
            return subscribed(token.plain)
        }
        guard try await bankCall({ try await bank.authorizeSubscription(question) }) else {
            counted("refused")
            throw APIError(403, "AUTHORIZATION_REFUSED", "the bank could not start authorizing this subscription")
        }
        let registrationId = SecretToken.generate()
        try await registry.savePending(identity, pushToken: request.pushToken, registrationDigest: SecretToken.digest(registrationId), keep: 5,
                                       encryptionKey: request.encryptionKey.newKey)
        logger.info("device waits for its verification code", metadata: Self.logged(identity, pushToken: nil))
        counted("verification_required")
        return JSONResponse.make(202, ["state": "VERIFICATION_REQUIRED", "registrationId": registrationId])
    }

    private func verify(_ request: VerifyRequest) async throws -> HTTPResponse {
        guard let pending = try await registry.pending(
            registrationDigest: SecretToken.digest(request.registrationId), bankClientId: request.bankClientId,
            userId: request.userId, deviceId: request.deviceId)
        else {
            throw APIError(404, "REGISTRATION_NOT_FOUND", "no registration with this registrationId is waiting for a code for this device; register first")
        }
        let bank = try requireBank()
        // The attempt is counted before the bank sees the code: concurrent guesses share the limit.
        let lastAttempt = try await limits.reserveVerification(
            bankClientId: request.bankClientId, userKey: identifiers.comparable(request.userId), deviceId: request.deviceId, store: rateLimits)
        let verified = try await bankCall {
            try await bank.verifySubscriptionAuthorization(bankClientId: request.bankClientId, userId: request.userId, deviceId: request.deviceId, code: request.verificationCode)
        }
        guard verified else {
            if lastAttempt {
                try await registry.dropPending(bankClientId: request.bankClientId, userId: request.userId, deviceId: request.deviceId)
            }
            logger.info("verification code refused", metadata: ["user": request.userId, "registrationDropped": String(lastAttempt)])
            counted("refused")
            throw APIError(403, "VERIFICATION_FAILED", lastAttempt
                ? "the verification code is wrong, and this device has no attempts left: register again later for a new code"
                : "the verification code is not the one the bank sent")
        }
        let token = newToken()
        try await registry.subscribe(pending.identity, pushToken: pending.pushToken, token: token.stored, override: overrideSubscriptions,
                                     encryptionKey: pending.encryptionKey)
        logger.info("device verified and subscribed", metadata: Self.logged(pending.identity, pushToken: pending.pushToken))
        counted("verified")
        return subscribed(token.plain)
    }

    /// Whether a bearer token's device is the one a registration names.
    /// A registration's log fields: the user, platform and app, and the push token shortened.
    private static func logged(_ identity: DeviceIdentity, pushToken: String?) -> [String: String] {
        var fields = ["user": identity.userId, "platform": identity.platform.rawValue,
                      "app": PushRoute(platform: identity.platform, appId: identity.appId).appLabel]
        if let pushToken { fields["pushToken"] = Redaction.token(pushToken) }
        return fields
    }

    private func sameDevice(_ known: DeviceIdentity, _ claimed: DeviceIdentity) -> Bool {
        known.deviceId == claimed.deviceId && known.platform == claimed.platform && known.bankClientId == claimed.bankClientId
            && known.appId == claimed.appId && identifiers.comparable(known.userId) == identifiers.comparable(claimed.userId)
    }

    private func counted(_ result: String) {
        metrics.increment(Metric.deviceRegistrationsTotal, labels: ["result": result])
    }

    private func requireBank() throws(APIError) -> any SubscriptionAuthorizing {
        guard let bank else {
            throw APIError(503, "BANK_PROXY_NOT_CONFIGURED", "new devices need the bank's authorization, and sbiOutboundWebServiceURL is not set")
        }
        return bank
    }

    /// A bank call with its failures as API errors; nothing has been stored when one is thrown.
    private func bankCall<T>(_ call: () async throws -> T) async throws(APIError) -> T {
        do {
            return try await call()
        } catch {
            guard let error = error as? BankProxyError else {
                counted("bank_unavailable")
                throw APIError(503, "BANK_PROXY_UNAVAILABLE", "the bank cannot be reached; nothing was registered, try again later")
            }
            switch error.kind {
            case .bankClientNotExists:
                throw APIError(404, "BANK_CLIENT_NOT_EXISTS", "the bank does not know this bankClientId")
            case .unavailable:
                counted("bank_unavailable")
                logger.warning("bank proxy unavailable", metadata: ["error": error.message])
                throw APIError(503, "BANK_PROXY_UNAVAILABLE", "the bank cannot be reached; nothing was registered, try again later")
            case .invalidAnswer:
                counted("bank_invalid_answer")
                logger.error("bank proxy answered something unexpected", metadata: ["error": error.message])
                throw APIError(502, "BANK_PROXY_INVALID_ANSWER", "the bank answered something unexpected; nothing was registered")
            }
        }
    }

    private func subscribed(_ token: String) -> HTTPResponse {
        JSONResponse.make(200, ["state": "SUBSCRIBED", "authenticationToken": token])
    }

    private func newToken() -> (plain: String, stored: StoredToken) {
        let plain = SecretToken.generate()
        return (plain, StoredToken(digest: SecretToken.digest(plain), expiresAt: Date() + Double(tokenLifetime.components.seconds)))
    }

    // MARK: Authenticated calls

    /// The bearer token of `Authorization`, if the header has one of a plausible length.
    private func bearerToken(_ request: HTTPRequest) -> String? {
        guard let header = request.header("authorization"), header.count > 7, header.prefix(7).lowercased() == "bearer " else {
            return nil
        }
        let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        return token.isEmpty || token.utf8.count > 256 ? nil : token
    }

    package func authenticate(_ request: HTTPRequest) async throws -> AuthenticatedDevice {
        guard let token = bearerToken(request), let device = try await registry.authenticate(digest: SecretToken.digest(token)) else {
            throw APIError.unauthorized
        }
        return device
    }

    private func notificationId(_ raw: String) throws(APIError) -> String {
        guard let id = raw.removingPercentEncoding, !id.isEmpty, id.utf8.count <= JSONFields.maximumIdentifierLength,
              !ControlCharacters.present(in: id) else {
            throw .badRequest("INVALID_NOTIFICATION_ID", "the notification id in the path is empty, badly encoded, too long or has control characters")
        }
        return id
    }

    private func acknowledge(_ rawId: String, _ target: DeliveryState, _ request: HTTPRequest) async throws -> HTTPResponse {
        let device = try await authenticate(request)
        let id = try notificationId(rawId)
        switch try await acknowledgements.acknowledge(notificationId: id, user: device.userId, device: device.id, target: target) {
        case .recorded(let state):
            return JSONResponse.make(200, ["notificationId": id, "state": state.rawValue])
        case .notAddressed, .notFound:
            // Someone else's notification is answered as an unknown one: the answer does not
            // tell whether a notification id exists.
            throw APIError(404, "NOTIFICATION_NOT_FOUND", "no notification with this id for this user")
        }
    }

    private func details(_ rawId: String, _ request: HTTPRequest) async throws -> HTTPResponse {
        let device = try await authenticate(request)
        let id = try notificationId(rawId)
        switch try await acknowledgements.notification(id: id, user: device.userId) {
        case .found(let notification) where notification.contentErased:
            // CONTRACT §8: a confidential notification that is over keeps no content.
            throw APIError(410, "CONTENT_GONE", "this confidential notification is over and its content was erased")
        case .found(let notification):
            return JSONResponse.make(200, Self.json(notification))
        case .notAddressed, .notFound:
            // Someone else's notification is answered as an unknown one: the answer does not
            // tell whether a notification id exists.
            throw APIError(404, "NOTIFICATION_NOT_FOUND", "no notification with this id for this user")
        }
    }

    /// What the app may read: the push content with its details, and the notification's details.
    package static func json(_ notification: PushNotification) -> [String: Any] {
        var content: [String: Any] = [
            "text": notification.pushContent.text,
            "type": notification.pushContent.type.rawValue,
            "details": Dictionary(notification.pushContent.details.map { ($0.key, $0.value) }) { first, _ in first },
        ]
        if let badge = notification.pushContent.badge { content["badge"] = badge }
        if let sound = notification.pushContent.sound { content["sound"] = sound }
        var object: [String: Any] = ["id": notification.id, "pushContent": content]
        if let details = notification.details {
            object["details"] = Dictionary(details.map { ($0.key, $0.value) }) { first, _ in first }
        }
        return object
    }
}
