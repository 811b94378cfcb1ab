import Foundation
@testable import PigeonConfiguration
import PigeonCore
import PigeonDelivery
import PigeonDomain
@testable import PigeonServer
import PigeonSimulator
import PigeonTestSupport
import PushCore
import Synchronization
import Testing

/// What the delivery engine relies on from a push service's batch (CONTRACT §10), held to both
/// implementations: the fake sender its unit tests run on (single pushes through the seam's
/// default batch) and the gateway's APNs sender — HTTP/2 batches through libcurl to the
/// simulator (integration tier): every push answered once by its own index, a push past its
/// deadline never sent, and a batch whose caller stops starting nothing more.
@Suite("Push sending contract: the fake sender and APNs over HTTP/2 answer a batch alike", .serialized, .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PushSendingContractTests {
    enum Kind: String, CustomStringConvertible, CaseIterable {
        case fake, apns
        var description: String { rawValue }
        static var available: [Kind] { TestTier.runsIntegration ? [.fake, .apns] : [.fake] }
    }

    /// A sender; the tokens it has sent to; a way to hold the answer to `token` until `release`
    /// is called; how to stop.
    struct Service {
        var sender: any PushSending
        var sent: @Sendable () -> [String]
        var hold: @Sendable (_ token: String) -> Void
        var release: @Sendable () -> Void
        var finish: @Sendable () -> Void
    }

    /// A gate the fake's held answers wait at.
    final class Hold: Sendable {
        let held = Mutex<Set<String>>([])
        let released = Mutex(false)
        func wait(_ token: String) async {
            while held.withLock({ $0.contains(token) }) && !released.withLock({ $0 }) {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    static func make(_ kind: Kind) async throws -> Service {
        switch kind {
        case .fake:
            let hold = Hold()
            let sender = FakeSender { token, _ in
                await hold.wait(token)
                return .accepted(id: nil)
            }
            return Service(sender: sender, sent: { sender.tokens.withLock { $0 } }, hold: { token in hold.held.withLock { _ = $0.insert(token) } },
                           release: { hold.released.withLock { $0 = true } }, finish: {})
        case .apns:
            let fixture = try await SimulatorFixture.start()
            let configuration = try GatewayConfiguration.parse(text: fixture.simulator.configurationSnippet, name: "contract")
            let transports = try PushTransports(configuration: configuration, logger: .silent, metrics: MetricsRegistry())
            let sender = try #require(transports.senders[PushRoute(platform: .ios)])
            let apns = fixture.simulator.apns
            return Service(sender: sender, sent: { apns.deliveries.map(\.deviceToken) },
                           // Held 10 s at the service (within the client's 30 s timeout): long
                           // enough for the test's cancel though a loaded machine holds up its task.
                           hold: { token in apns.setFaults(FaultRules([token: .init(.delay(milliseconds: 10_000))])) },
                           release: {},
                           finish: {
                               transports.clients.forEach { $0.client.shutdown(abandonRunning: true) }
                               fixture.stop()
                           })
        }
    }

    static func token(_ index: Int) -> String { String(format: "%064x", index + 1) }

    static func batch(_ count: Int, expiresAt: Date = Date().addingTimeInterval(3600)) -> PushBatch {
        PushBatch(messages: [PushMessage(notificationId: "n", text: "t", urgency: .normal, expiresAt: expiresAt)],
                  pushes: (0..<count).map { PushBatch.Push(message: 0, token: token($0)) })
    }

    /// Sends `batch` and collects each result by index.
    static func send(_ sender: any PushSending, _ batch: PushBatch, maxInFlight: Int) async -> [Int: [PushOutcome]] {
        let results = Mutex<[Int: [PushOutcome]]>([:])
        await sender.send(batch, maxInFlight: maxInFlight) { result in results.withLock { $0[result.index, default: []].append(result.outcome) } }
        return results.withLock { $0 }
    }

    @Test("every push of a batch is answered exactly once, under its own index, and sent once", arguments: Kind.available)
    func everyPushOnce(kind: Kind) async throws {
        let service = try await Self.make(kind)
        defer { service.finish() }
        let results = await Self.send(service.sender, Self.batch(20), maxInFlight: 4)
        #expect(results.count == 20 && results.values.allSatisfy { $0.count == 1 })
        #expect(results.values.allSatisfy { if case .accepted = $0[0] { true } else { false } }, "\(results)")
        #expect(service.sent().sorted() == (0..<20).map(Self.token).sorted())
    }

    @Test("a push whose message's time has run out is answered expired and never sent", arguments: Kind.available)
    func pastDeadline(kind: Kind) async throws {
        let service = try await Self.make(kind)
        defer { service.finish() }
        let results = await Self.send(service.sender, Self.batch(3, expiresAt: Date().addingTimeInterval(-1)), maxInFlight: 4)
        #expect(results.count == 3 && results.values.allSatisfy { $0 == [.expired] }, "\(results)")
        #expect(service.sent().isEmpty)
    }

    @Test("a batch whose caller is cancelled while its first push is on the wire: that push finishes and is answered; the others are answered deferred and never sent",
          arguments: Kind.available)
    func cancelledStartsNothingMore(kind: Kind) async throws {
        let service = try await Self.make(kind)
        defer { service.finish() }
        service.hold(Self.token(0))
        let results = Mutex<[Int: [PushOutcome]]>([:])
        let sending = Task {
            await service.sender.send(Self.batch(5), maxInFlight: 1) { result in results.withLock { $0[result.index, default: []].append(result.outcome) } }
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while service.sent().isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(service.sent() == [Self.token(0)])
        sending.cancel()
        service.release()
        await sending.value
        let answered = results.withLock { $0 }
        #expect(answered.count == 5 && answered.values.allSatisfy { $0.count == 1 })
        #expect(answered[0].map { if case .accepted = $0[0] { true } else { false } } == true, "\(answered)")
        #expect((1..<5).allSatisfy { answered[$0] == [.deferred] }, "\(answered)")
        #expect(service.sent() == [Self.token(0)], "nothing started after the cancel")
    }
}
