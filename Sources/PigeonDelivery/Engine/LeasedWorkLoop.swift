import Foundation
import PigeonCore

/// The loop of every engine over a leased queue (Wallet pass updates, Live Activities, the
/// outbox): claim a batch; with nothing due, wait (for a wake or the idle poll); else work it,
/// its results written even while the engine stops (what was pushed or sent is never repeated
/// for want of a write); until cancelled; then hand back what is still held.
struct LeasedWorkLoop<Claim: Sendable>: Sendable {
    /// What the queue holds, for the log ("pass update pushes").
    var what: String
    var clock: any DeliveryClock
    var logger: Logger
    /// How long an idle loop waits before claiming again, and the wake that ends the wait early.
    var idlePoll: Duration
    var wake: WakeSignal?

    /// Runs until the task is cancelled. `work` gets each non-empty claim (a stop may cut it
    /// short: what it did not start is handed back); `write` gets its results and is shielded
    /// from cancellation; `release` hands back what the engine still holds at the end.
    func run<Results: Sendable>(claim: @Sendable () async throws -> [Claim], work: @Sendable ([Claim]) async -> Results,
                                write: @escaping @Sendable (Results) async -> Void,
                                release: (@Sendable () async throws -> Int)? = nil) async {
        while !Task.isCancelled {
            let claims: [Claim]
            do {
                claims = try await claim()
            } catch {
                if Task.isCancelled { break }
                logger.warning("cannot claim \(what)", metadata: ["error": "\(error)"])
                try? await clock.sleep(for: .seconds(1))
                continue
            }
            if claims.isEmpty {
                if let wake {
                    await wake.wait(upTo: idlePoll, clock: clock)
                } else {
                    try? await clock.sleep(for: idlePoll)
                }
                continue
            }
            let results = await work(claims)
            await CancellationShield.run { await write(results) }
        }
        guard let release else { return }
        await CancellationShield.run {
            do {
                let released = try await release()
                if released > 0 { logger.notice("\(what) handed back", metadata: ["claims": String(released)]) }
            } catch {
                logger.warning("cannot hand back \(what); they come due when their lease ends", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Writes results with `write`, tried three times, 0.2 s then 0.4 s apart on the engine's
    /// clock (the pushes were made: an unwritten result would repeat them when the lease ends).
    func record(_ write: @Sendable () async throws -> Void) async {
        for attempt in 1...3 {
            do {
                try await write()
                return
            } catch {
                logger.warning("cannot record \(what)", metadata: ["attempt": String(attempt), "error": "\(error)"])
                if attempt < 3 { try? await clock.sleep(for: .milliseconds(200 * attempt)) }
            }
        }
    }
}
