import Foundation
import PigeonCore

/// The loop of every engine over a leased queue (Wallet pass updates, Live Activities, the
/// outbox): claim a batch; with nothing due, wait (for a wake or the idle poll); else work it and
/// write its results; until the stop; then hand back what is still held. A graceful stop leaves
/// the loop's task alive, so what was pushed or sent is written down (never repeated for want of
/// a write) without any shield.
struct LeasedWorkLoop<Claim: Sendable>: Sendable {
    /// What the queue holds, for the log ("pass update pushes").
    var what: String
    var clock: any DeliveryClock
    var logger: Logger
    /// How long an idle loop waits before claiming again, and the wake that ends the wait early.
    var idlePoll: Duration
    var wake: WakeSignal?

    /// Runs until `stop` is requested (or the task is cancelled). `work` gets each non-empty
    /// claim and the stop: once it is requested, work starts nothing more (what it did not start
    /// it leaves out of its results, to be handed back); `write` gets the results; `release`
    /// hands back what the engine still holds at the end.
    func run<Results: Sendable>(until stop: GracefulStop, claim: @Sendable () async throws -> [Claim],
                                work: @Sendable ([Claim], GracefulStop) async -> Results,
                                write: @Sendable (Results) async -> Void,
                                release: (@Sendable () async throws -> Int)? = nil) async {
        while !stop.shouldStop {
            let claims: [Claim]
            do {
                claims = try await claim()
            } catch {
                if stop.shouldStop { break }
                logger.warning("cannot claim \(what)", metadata: ["error": "\(error)"])
                await stop.sleep(for: .seconds(1), on: clock)
                continue
            }
            if claims.isEmpty {
                if let wake {
                    await stop.wait(for: wake, upTo: idlePoll, on: clock)
                } else {
                    await stop.sleep(for: idlePoll, on: clock)
                }
                continue
            }
            await write(await work(claims, stop))
        }
        guard let release else { return }
        do {
            let released = try await release()
            if released > 0 { logger.notice("\(what) handed back", metadata: ["claims": String(released)]) }
        } catch {
            logger.warning("cannot hand back \(what); they come due when their lease ends", metadata: ["error": "\(error)"])
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
