import Foundation
import OutboundHTTP
import PigeonCrypto
import PushCore
import Synchronization

/// Sends pushes to APNs over one ``HTTP2Client``. With token authentication it keeps one
/// provider token per key, reused across requests and replaced per ``ProviderTokenSchedule`` —
/// never signed per request. Every answer, and every transport failure, becomes a
/// ``PushOutcome``.
package final class APNsTransport: Sendable {
    package enum Authentication: Sendable {
        /// The client certificate is configured on the ``HTTP2Client``.
        case certificate
        case token(APNsSigningCredentials)
    }

    /// What happened to the provider token, for the operator's log and metrics.
    package enum ProviderTokenEvent: Sendable, Equatable {
        case signed(ProviderTokenSigning)
        /// APNs refused the token for `reason`; `replacing`: a new one is signed before the next push.
        case rejected(reason: String, replacing: Bool)
        /// APNs answered `TooManyProviderTokenUpdates`: no token is signed before `until`.
        case throttled(until: Date)
        /// APNs refused the key itself for this topic or environment (`reason` is Apple's): a
        /// configuration error of the app; no new token is signed for it.
        case keyRestricted(reason: String)
    }

    private struct TokenState {
        var schedule: ProviderTokenSchedule
        var signed = 0
    }

    /// The provider token of one key, shared by the transports of its app's environments:
    /// Apple takes one token on both hosts, and the once-a-minute rule is per key.
    private final class ProviderTokens: Sendable {
        let state: Mutex<TokenState>
        init(policy: ProviderTokenPolicy) { state = Mutex(TokenState(schedule: ProviderTokenSchedule(policy: policy))) }
    }

    private let client: HTTP2Client
    private let endpoint: String
    private let builder: APNsRequestBuilder
    private let authentication: Authentication
    private let clock: @Sendable () -> Date
    private let onTokenEvent: @Sendable (ProviderTokenEvent) -> Void
    private let tokens: ProviderTokens
    /// Each push's `apns-id`.
    private let identifiers = PushIdentifiers()

    package init(client: HTTP2Client, endpoint: String, topic: String?, authentication: Authentication,
                policy: ProviderTokenPolicy = ProviderTokenPolicy(), clock: @escaping @Sendable () -> Date = Date.init,
                onTokenEvent: @escaping @Sendable (ProviderTokenEvent) -> Void = { _ in }) {
        self.client = client
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = APNsRequestBuilder(topic: topic)
        self.authentication = authentication
        self.clock = clock
        self.onTokenEvent = onTokenEvent
        self.tokens = ProviderTokens(policy: policy)
    }

    private init(sibling: APNsTransport, endpoint: String, client: HTTP2Client? = nil) {
        self.client = client ?? sibling.client
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        builder = sibling.builder
        authentication = sibling.authentication
        clock = sibling.clock
        onTokenEvent = sibling.onTokenEvent
        tokens = sibling.tokens
    }

    /// A transport to another APNs host (the sandbox of a production one) with the same client,
    /// topic and credentials, sharing this one's provider token.
    package func sending(to endpoint: String) -> APNsTransport {
        APNsTransport(sibling: self, endpoint: endpoint)
    }

    /// The same host, topic and credentials over another client (the urgent lane's
    /// connections), sharing this one's provider token.
    package func using(_ client: HTTP2Client) -> APNsTransport {
        APNsTransport(sibling: self, endpoint: endpoint, client: client)
    }

    /// Provider tokens signed so far.
    package var providerTokensSigned: Int { tokens.state.withLock { $0.signed } }

    /// One attempt to deliver `message` to `deviceToken`.
    package func send(_ message: PushMessage, to deviceToken: String, apnsId: UUID = UUID()) async -> PushOutcome {
        let request: PushRequest
        do {
            request = try builder.request(for: message, deviceToken: deviceToken, apnsId: apnsId)
        } catch {
            return .failed(reason: error.description)
        }
        let authorization: String?
        switch bearer() {
        case .success(let value): authorization = value
        case .failure(let failure): return .failed(reason: failure.description)
        }
        var headers = request.headers
        if let authorization { headers["authorization"] = "bearer \(authorization)" }
        let outcome = outcome(of: await client.answer(url: endpoint + request.path, headers: headers, body: request.body,
                                                      wantHeaders: ["apns-id", "retry-after"]))
        if let authorization { tokenAnswered(authorization, outcome: outcome) }
        return outcome
    }

    /// Sends a batch as one submission to the HTTP/2 client, at most `maxInFlight` at once;
    /// `onResult` gets each push's result as it arrives (on the client's thread: it must be
    /// quick). Each message's headers and payload are built once. Pushes refused because the
    /// provider token they carried was refused (`ExpiredProviderToken`, …) are sent once more
    /// with the token signed in its place (``BatchRounds``), so one refused token does not fail
    /// a whole batch.
    package func send(_ batch: PushBatch, maxInFlight: Int, onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        let prepared = batch.messages.map { message in PushMessage.prepared(message) { message throws(PushMessageError) in try builder.prepare(message) } }
        await send(prepared, expiries: batch.messages.map { message in batch.startBy.map { min($0, message.expiresAt) } ?? message.expiresAt }, pushes: batch.pushes, maxInFlight: maxInFlight, onResult: onResult)
    }

    /// Wallet pass update pushes (`{}` on the pass type's topic) to `tokens`, at most
    /// `maxInFlight` at once; one outcome per token, in order.
    package func sendPassUpdates(passTypeIdentifier: String, tokens: [String], maxInFlight: Int) async -> [PushOutcome] {
        await send(APNsRequestBuilder.passUpdate(passTypeIdentifier: passTypeIdentifier), to: tokens, maxInFlight: maxInFlight)
    }

    /// A request built elsewhere (a Wallet pass update, a Live Activity event, a widget refresh:
    /// its own push type and topic) to each of `tokens`, at most `maxInFlight` at once, with this
    /// transport's credentials; one outcome per token, in order.
    package func send(_ prepared: APNsPreparedMessage, to tokens: [String], maxInFlight: Int) async -> [PushOutcome] {
        let outcomes = Mutex([PushOutcome](repeating: .retry(reason: "not sent", after: nil), count: tokens.count))
        await send([.success(prepared)], expiries: [nil],
                   pushes: tokens.map { PushBatch.Push(message: 0, token: $0) }, maxInFlight: maxInFlight) { result in
            outcomes.withLock { $0[result.index] = result.outcome }
        }
        return outcomes.withLock { $0 }
    }

    /// One call to Apple's broadcast and channel management API (CONTRACT §9) with this
    /// transport's provider token (or client certificate): `path` on this transport's host, or
    /// `url` whole (the channel management host). The answer, or the transport failure.
    package func call(method: String, path: String? = nil, url: String? = nil, headers: [String: String], body: Data) async
        -> Result<HTTP2Client.Response, APNsCallFailure> {
        var headers = headers
        switch bearer() {
        case .success(let authorization?): headers["authorization"] = "bearer \(authorization)"
        case .success(nil): break
        case .failure(let failure): return .failure(APNsCallFailure(message: failure.description))
        }
        headers["apns-request-id"] = UUID().uuidString.lowercased()
        do {
            return .success(try await client.send(url: url ?? endpoint + (path ?? "/"), method: method, headers: headers, body: body,
                                                  wantHeaders: ["apns-channel-id", "apns-request-id", "apns-id"]))
        } catch {
            return .failure(APNsCallFailure(message: "transport: \(error)"))
        }
    }

    private func send(_ prepared: [Result<APNsPreparedMessage, PushMessageError>], expiries: [Date?], pushes: [PushBatch.Push], maxInFlight: Int,
                      onResult: @escaping @Sendable (PushBatchResult) -> Void) async {
        let rounds = BatchRounds<String?>(
            credential: { [self] in
                bearer().mapError { CredentialUnavailable(outcome: .failed(reason: $0.description)) }
            },
            request: { [endpoint, identifiers] push, authorization in
                prepared[push.message].mapError(RequestRefused.init).map { message in
                    var lines = message.headerLines
                    lines.append("apns-id: \(identifiers.next())")
                    if let authorization { lines.append("authorization: bearer \(authorization)") }
                    return HTTP2Client.Request(url: endpoint + message.path(deviceToken: push.token), headerLines: lines,
                                               body: message.body, wantHeaders: ["apns-id", "retry-after"])
                }
            },
            outcome: { [self] response, authorization, _ in
                let outcome = outcome(of: response)
                if let authorization { tokenAnswered(authorization, outcome: outcome) }
                return outcome
            },
            replace: { [self] refused in
                // Only a signed token can be replaced, and only when the schedule signs a new one.
                guard refused != nil, case .success(let next) = bearer() else { return false }
                return next != refused
            },
            deadline: { push in expiries[push.message] })
        await rounds.send(pushes, client: client, maxInFlight: maxInFlight, onResult: onResult)
    }

    /// The provider token to send with the next request, `nil` with certificate
    /// authentication, or why none could be signed.
    private func bearer() -> Result<String?, TokenFailure> {
        guard case .token(let credentials) = authentication else { return .success(nil) }
        do {
            return .success(try currentToken(credentials))
        } catch {
            return .failure(TokenFailure(description: "cannot sign the provider token: \(error)"))
        }
    }

    private struct TokenFailure: Error, CustomStringConvertible {
        var description: String
    }

    private func outcome(of result: Result<HTTP2Client.Response, HTTP2Client.TransportError>) -> PushOutcome {
        switch result {
        case .success(let response):
            APNsResponse.classify(status: response.status, body: response.body, apnsId: response.headers["apns-id"],
                                  retryAfter: response.headers["retry-after"], now: clock())
        case .failure(let error):
            .retry(reason: "transport: \(error.message)", after: nil, cause: .connection)
        }
    }

    private func currentToken(_ credentials: APNsSigningCredentials) throws -> String {
        let now = clock()
        let (token, signing) = try tokens.state.withLock { state -> (String, ProviderTokenSigning?) in
            guard let reason = state.schedule.signingNeeded(now: now) else {
                return (state.schedule.current?.token ?? "", nil)
            }
            let token = try credentials.providerToken(issuedAt: now)
            state.schedule.signed(token, at: now, reason: reason)
            state.signed += 1
            return (token, reason)
        }
        if let signing { onTokenEvent(.signed(signing)) }
        return token
    }

    /// Feeds APNs' answer to a request made with `token` into the schedule.
    private func tokenAnswered(_ token: String, outcome: PushOutcome) {
        let now = clock()
        switch outcome {
        case .accepted:
            tokens.state.withLock { $0.schedule.accepted() }
        case .refreshCredentials(let reason):
            let replacing = tokens.state.withLock { $0.schedule.rejected(token, now: now) }
            onTokenEvent(.rejected(reason: reason, replacing: replacing))
        case .retry(let reason, _, _) where reason == "TooManyProviderTokenUpdates":
            if let until = tokens.state.withLock({ $0.schedule.throttled(token, now: now) }) {
                onTokenEvent(.throttled(until: until))
            }
        case .failed:
            if let apple = APNsResponse.keyRestriction(outcome) { onTokenEvent(.keyRestricted(reason: apple)) }
        default:
            break
        }
    }
}

/// Why a call to Apple's API got no answer (a provider token that cannot be signed, a transport failure).
package struct APNsCallFailure: Error, Sendable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}
