import Foundation
import OutboundHTTP
@testable import PigeonSimulator
import PigeonTestSupport
@testable import PushCore
@testable import PushTransport
import Synchronization
import Testing

/// The APNs and FCM transports against `pigeon simulate`'s endpoints.
@Suite("Push transports", .enabled(if: TestTier.runsIntegration, "integration tier (sockets): PIGEON_TEST_TIER"))
struct TransportTests {
    @Test("APNs with token auth: one provider token reused across many pushes, replaced after 50 minutes")
    func apnsTokenReuse() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let client = try HTTP2Client(configuration: .init(caFile: simulator.credentials.caFile))
        defer { client.shutdown() }
        let clock = ManualClock(Date())
        let signing = try APNsSigningCredentials(p8PEM: try String(contentsOfFile: simulator.credentials.apnsKey, encoding: .utf8),
                                                 keyId: SimulatorCredentials.keyId, teamId: SimulatorCredentials.teamId)
        let transport = APNsTransport(client: client, endpoint: simulator.baseURL, topic: SimulatorCredentials.topic,
                                      authentication: .token(signing), clock: { clock.read() })
        let message = PushMessage(notificationId: "n", text: "t", urgency: .normal, expiresAt: clock.read() + 3600)
        let outcomes = await withTaskGroup(of: PushOutcome.self) { group in
            for index in 0..<200 {
                group.addTask { await transport.send(message, to: String(format: "%08x", index)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0.label == "accepted" })
        #expect(transport.providerTokensSigned == 1)
        simulator.apns.setFaults(FaultRules(["deadbeef": .init(.unregistered)]))
        guard case .tokenDead(let reason, _) = await transport.send(message, to: "deadbeef") else { Issue.record("expected tokenDead"); return }
        #expect(reason == "Unregistered")
        // The simulator checks the token's age against real time, so the policy is tested on
        // its own; here: 50 minutes later the transport signs exactly one new token.
        clock.set(clock.read() + 51 * 60)
        _ = await transport.send(message, to: "00aa")
        #expect(transport.providerTokensSigned == 2)
    }

    @Test("ExpiredProviderToken on a young token: a new token at once, pushes accepted, no TooManyProviderTokenUpdates")
    func youngTokenRefused() async throws {
        let clock = ManualClock(Date())
        let fixture = try await SimulatorFixture.start(clock: { clock.read() })
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let client = try HTTP2Client(configuration: .init(maxConnections: 1, caFile: simulator.credentials.caFile))
        defer { client.shutdown() }
        let events = Mutex<[APNsTransport.ProviderTokenEvent]>([])
        let transport = APNsTransport(client: client, endpoint: simulator.baseURL, topic: SimulatorCredentials.topic,
                                      authentication: .token(try Self.signing(simulator)), clock: { clock.read() },
                                      onTokenEvent: { event in events.withLock { $0.append(event) } })
        let message = PushMessage(notificationId: "n", text: "t", urgency: .high, expiresAt: clock.read() + 3600)
        #expect(await transport.send(message, to: "00a1").label == "accepted")

        // Five seconds later APNs calls the token expired.
        clock.set(clock.read() + 5)
        simulator.apns.expireProviderTokens()
        #expect(await transport.send(message, to: "00a2") == .refreshCredentials(reason: "ExpiredProviderToken"))
        let retried = await withTaskGroup(of: String.self) { group in
            for index in 0..<20 { group.addTask { await transport.send(message, to: String(format: "00b%03d", index)).label } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(retried.allSatisfy { $0 == "accepted" }, "\(retried)")
        #expect(transport.providerTokensSigned == 2)
        #expect(events.withLock { $0 } == [.signed(.first), .rejected(reason: "ExpiredProviderToken", replacing: true), .signed(.rejected)])

        // Refused again at once (a key APNs keeps refusing): not re-signed within the minute.
        simulator.apns.expireProviderTokens()
        #expect(await transport.send(message, to: "00a3") == .refreshCredentials(reason: "ExpiredProviderToken"))
        #expect(await transport.send(message, to: "00a4") == .refreshCredentials(reason: "ExpiredProviderToken"))
        #expect(transport.providerTokensSigned == 2)
        clock.set(clock.read() + 61)
        #expect(await transport.send(message, to: "00a5") == .refreshCredentials(reason: "ExpiredProviderToken"))
        #expect(await transport.send(message, to: "00a6").label == "accepted")
        #expect(transport.providerTokensSigned == 3)
        #expect(simulator.apns.providerTokenRefreshes == 0, "no token change counted as too frequent")
    }

    @Test("TooManyProviderTokenUpdates: the transport goes back to its previous token and signs nothing for a while")
    func tooManyTokenUpdates() async throws {
        let clock = ManualClock(Date())
        let fixture = try await SimulatorFixture.start(clock: { clock.read() })
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let client = try HTTP2Client(configuration: .init(maxConnections: 1, caFile: simulator.credentials.caFile))
        defer { client.shutdown() }
        let events = Mutex<[APNsTransport.ProviderTokenEvent]>([])
        // Refreshing every 5 minutes is more often than APNs allows (20).
        let transport = APNsTransport(client: client, endpoint: simulator.baseURL, topic: SimulatorCredentials.topic,
                                      authentication: .token(try Self.signing(simulator)), policy: ProviderTokenPolicy(refreshAge: 5 * 60),
                                      clock: { clock.read() }, onTokenEvent: { event in events.withLock { $0.append(event) } })
        let message = PushMessage(notificationId: "n", text: "t", urgency: .high, expiresAt: clock.read() + 3600)
        #expect(await transport.send(message, to: "00c1").label == "accepted")
        clock.set(clock.read() + 6 * 60)
        #expect(await transport.send(message, to: "00c2") == .retry(reason: "TooManyProviderTokenUpdates", after: nil, cause: .throttled))
        // Back on the first token, which APNs still takes; nothing signed during the back-off.
        #expect(await transport.send(message, to: "00c3").label == "accepted")
        clock.set(clock.read() + 30)
        #expect(await transport.send(message, to: "00c4").label == "accepted")
        #expect(transport.providerTokensSigned == 2)
        let throttles = events.withLock { $0.filter { if case .throttled = $0 { true } else { false } } }
        #expect(throttles == [.throttled(until: clock.read() - 30 + 60)])
    }

    static func signing(_ simulator: Simulator) throws -> APNsSigningCredentials {
        try APNsSigningCredentials(p8PEM: try String(contentsOfFile: simulator.credentials.apnsKey, encoding: .utf8),
                                   keyId: SimulatorCredentials.keyId, teamId: SimulatorCredentials.teamId)
    }

    @Test("a delay fault on every token holds each answer back without serialising the streams")
    func delayedAnswers() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let client = try HTTP2Client(configuration: .init(caFile: simulator.credentials.caFile))
        defer { client.shutdown() }
        let signing = try APNsSigningCredentials(p8PEM: try String(contentsOfFile: simulator.credentials.apnsKey, encoding: .utf8),
                                                 keyId: SimulatorCredentials.keyId, teamId: SimulatorCredentials.teamId)
        let transport = APNsTransport(client: client, endpoint: simulator.baseURL, topic: SimulatorCredentials.topic, authentication: .token(signing))
        simulator.apns.setFaults(FaultRules([FaultRules.anyToken: .init(.delay(milliseconds: 2_000)), "0dead": .init(.unregistered)]))
        let message = PushMessage(notificationId: "n", text: "t", urgency: .normal, expiresAt: Date() + 3600)
        let timed = await withTaskGroup(of: (PushOutcome, Duration, ContinuousClock.Instant).self) { group in
            for index in 0..<20 {
                group.addTask {
                    let begin = ContinuousClock.now
                    let outcome = await transport.send(message, to: String(format: "%06x", index))
                    let end = ContinuousClock.now
                    return (outcome, end - begin, end)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(timed.allSatisfy { $0.0.label == "accepted" && $0.1 >= .milliseconds(2_000) })
        // Served one after another, 20 answers held 2 s each would arrive at least 38 s apart
        // from first to last; side by side they arrive together. Half of that spread is the bound:
        // a loaded machine delays every answer alike, it does not spread them by seconds.
        let arrivals = timed.map(\.2).sorted()
        let spread = arrivals[arrivals.count - 1] - arrivals[0]
        #expect(spread < .seconds(19), "\(spread)")
        // A token's own rule wins over the wildcard.
        #expect(await transport.send(message, to: "0dead").label == "token_dead")
    }

    @Test("a refused connection is a retry outcome, never a crash or a lost answer")
    func transportFailure() async throws {
        let client = try HTTP2Client(configuration: .init(timeout: .seconds(3)))
        defer { client.shutdown() }
        let transport = APNsTransport(client: client, endpoint: "https://127.0.0.1:9", topic: "t", authentication: .certificate)
        let outcome = await transport.send(PushMessage(notificationId: "n", text: "t", urgency: .high, expiresAt: Date() + 60), to: "ab")
        #expect(outcome.label == "retry")
    }

    @Test("a batch sent after APNs refused the young token: the refused pushes go again with one new token, all accepted")
    func batchAfterRefusedToken() async throws {
        let clock = ManualClock(Date())
        let fixture = try await SimulatorFixture.start(clock: { clock.read() })
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let client = try HTTP2Client(configuration: .init(maxConnections: 1, caFile: simulator.credentials.caFile))
        defer { client.shutdown() }
        let transport = APNsTransport(client: client, endpoint: simulator.baseURL, topic: SimulatorCredentials.topic,
                                      authentication: .token(try Self.signing(simulator)), clock: { clock.read() })
        let messages = [PushMessage(notificationId: "n1", text: "a", urgency: .high, expiresAt: clock.read() + 3600),
                        PushMessage(notificationId: "n2", text: "b", urgency: .normal, expiresAt: clock.read() + 3600)]
        #expect(await transport.send(messages[0], to: "00a1").label == "accepted")
        clock.set(clock.read() + 5)
        simulator.apns.expireProviderTokens()
        simulator.apns.setFaults(FaultRules(["deadbeef": .init(.unregistered)]))
        let pushes = (0..<60).map { PushBatch.Push(message: $0 % 2, token: $0 == 7 ? "deadbeef" : String(format: "00c%03d", $0)) }
        let results = Mutex<[PushBatchResult]>([])
        await transport.send(PushBatch(messages: messages, pushes: pushes), maxInFlight: 8) { result in results.withLock { $0.append(result) } }
        let collected = results.withLock { $0 }.sorted { $0.index < $1.index }
        #expect(collected.map(\.index) == Array(0..<60))
        #expect(collected.filter { $0.index != 7 }.allSatisfy { $0.outcome.label == "accepted" }, "\(collected.map(\.outcome))")
        #expect(collected[7].outcome.label == "token_dead")
        #expect(transport.providerTokensSigned == 2)
        #expect(simulator.apns.providerTokenRefreshes == 0)
    }

    @Test("FCM batch: one body per message around each token, a dead token among accepted ones")
    func fcmBatch() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let client = try HTTP2Client(configuration: .init(caFile: simulator.credentials.caFile))
        defer { client.shutdown() }
        let account = try ServiceAccount(json: try Data(contentsOf: URL(fileURLWithPath: simulator.credentials.serviceAccount)))
        let transport = FCMTransport(client: client, endpoint: simulator.baseURL, projectId: account.projectId,
                                     tokens: FCMAccessTokens(account: account, client: client))
        simulator.fcm.setFaults(FaultRules(["reg-dead": .init(.unregistered)]))
        let message = PushMessage(notificationId: "n", text: "t", urgency: .high, expiresAt: Date() + 600)
        let pushes = (0..<40).map { PushBatch.Push(message: 0, token: $0 == 3 ? "reg-dead" : "reg-\($0)") }
        let results = Mutex<[PushBatchResult]>([])
        await transport.send(PushBatch(messages: [message], pushes: pushes), maxInFlight: 5) { result in results.withLock { $0.append(result) } }
        let collected = results.withLock { $0 }
        #expect(collected.count == 40)
        #expect(collected.filter { $0.outcome.label == "accepted" }.count == 39)
        #expect(collected.first { $0.index == 3 }?.outcome == .tokenDead(reason: "UNREGISTERED", since: nil))
        #expect(simulator.fcm.accessTokensIssued == 1)
    }

    @Test("FCM transport: accepted, dead token, and a new access token after a 401")
    func fcm() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.stop() }
        let simulator = fixture.simulator
        let client = try HTTP2Client(configuration: .init(caFile: simulator.credentials.caFile))
        defer { client.shutdown() }
        let account = try ServiceAccount(json: try Data(contentsOf: URL(fileURLWithPath: simulator.credentials.serviceAccount)))
        let tokens = FCMAccessTokens(account: account, client: client)
        let transport = FCMTransport(client: client, endpoint: simulator.baseURL, projectId: account.projectId, tokens: tokens)
        let message = PushMessage(notificationId: "n", text: "t", data: ["type": "URL", "target": "https://bank.example"], urgency: .high, expiresAt: Date() + 600)
        #expect(await transport.send(message, to: "reg-1").label == "accepted")
        simulator.fcm.setFaults(FaultRules(["reg-2": .init(.unregistered)]))
        #expect(await transport.send(message, to: "reg-2") == .tokenDead(reason: "UNREGISTERED", since: nil))
        #expect(simulator.fcm.accessTokensIssued == 1)
    }
}
